/**
 * JSON text and depth without recursion, for values whose nesting a user controls (a custom
 * resource's spec, a document from a ConfigMap). JSON.parse takes any depth, but JSON.stringify,
 * structuredClone and recursive walks throw RangeError (the call stack) a few thousand levels
 * down; these work at any depth, their cost linear in the value's size. Pure.
 *
 * - `jsonText(value)`: the text JSON.stringify gives for a JSON value (plain objects, arrays,
 *   strings, finite numbers, booleans, null; `undefined` members dropped, `undefined` items null).
 * - `renderJson(value, { sortKeys, shape })`: the same with object keys sorted (UTF-16 order),
 *   and, given a `shape`, restricted to what the shape names (lib/engine/hash.ts says how).
 * - `deeperThan(value, levels)`: whether objects and arrays nest more than `levels` deep.
 */

type Obj = Record<string, unknown>;

interface Frame {
  readonly value: unknown;
  /** the shape's counterpart of `value`, when projecting */
  readonly shape: unknown;
  readonly projecting: boolean;
  /** the object's keys to write, in order; null for an array */
  readonly keys: string[] | null;
  /** the next item or key */
  next: number;
  /** members written so far */
  written: number;
}

export interface RenderOptions {
  readonly sortKeys: boolean;
  /** set: only what the shape names is written (see lib/engine/hash.ts, projectedJson) */
  readonly shape?: unknown;
}

function scalar(value: unknown): string {
  return value === undefined ? 'null' : (JSON.stringify(value) ?? 'null');
}

/** JSON text of `value`, iteratively; see the header. */
export function renderJson(value: unknown, options: RenderOptions): string {
  let out = '';
  const stack: Frame[] = [];
  const open = (v: unknown, s: unknown, projecting: boolean): void => {
    if (v === null || typeof v !== 'object') {
      out += scalar(v);
      return;
    }
    let p = projecting && s !== null && typeof s === 'object';
    if (Array.isArray(v)) {
      if (p && (!Array.isArray(s) || s.length !== v.length)) p = false;
      out += '[';
      stack.push({ value: v, shape: p ? s : undefined, projecting: p, keys: null, next: 0, written: 0 });
      return;
    }
    if (p && Array.isArray(s)) p = false;
    let keys = p ? Object.keys(s as Obj) : Object.keys(v);
    if (p && keys.length === 0) {
      p = false;
      keys = Object.keys(v);
    }
    if (options.sortKeys) keys.sort();
    out += '{';
    stack.push({ value: v, shape: p ? s : undefined, projecting: p, keys, next: 0, written: 0 });
  };
  open(value, options.shape, options.shape !== undefined);
  while (stack.length > 0) {
    const f = stack[stack.length - 1] as Frame;
    if (f.keys === null) {
      const items = f.value as unknown[];
      if (f.next >= items.length) {
        out += ']';
        stack.pop();
        continue;
      }
      const i = f.next++;
      if (i > 0) out += ',';
      open(items[i], f.projecting ? (f.shape as unknown[])[i] : undefined, f.projecting);
      continue;
    }
    if (f.next >= f.keys.length) {
      out += '}';
      stack.pop();
      continue;
    }
    const k = f.keys[f.next++] as string;
    const child = (f.value as Obj)[k];
    if (child === undefined || (f.projecting && (f.shape as Obj)[k] === undefined)) continue;
    out += `${f.written++ === 0 ? '' : ','}${JSON.stringify(k)}:`;
    open(child, f.projecting ? (f.shape as Obj)[k] : undefined, f.projecting);
  }
  return out;
}

/** What JSON.stringify gives for a JSON value, at any depth. */
export function jsonText(value: unknown): string {
  return renderJson(value, { sortKeys: false });
}

/** Whether objects and arrays in `value` nest more than `levels` deep (a scalar is depth 0, `{}` depth 1). */
export function deeperThan(value: unknown, levels: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > levels) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * Canonical JSON and hashes. Key order never changes a hash; array order does.
 * `undefined` object members are dropped, as JSON.stringify drops them. Pure.
 *
 * Two hashes of what a gateway reports:
 * - `hashOf(body)`: of everything (the hash records kept before managed hashes, "legacy");
 * - `managedHash(body, sent)`: of the part of `body` we manage, the fields of the body we sent
 *   (design.md rule 3: "a gateway-side edit to a field we manage"). The gateway's echo repeats
 *   every field of its model filled with defaults (a ~7 KB echo of a ~2 KB API), so hashing
 *   only what we sent is most of the cost of a steady run saved. Where we sent an object, the
 *   hash takes the echo's members of the same names (recursively); where we sent an empty
 *   object, an array of another length, or a scalar, it takes the echo's value whole. So an
 *   edit on the gateway of anything we sent changes the hash; a field we never send does not.
 *   Managed hashes start with `m:`, so they are never mistaken for a legacy hash.
 */
import { createHash } from 'node:crypto';

/** Canonical JSON: object keys sorted (UTF-16 order), no whitespace; the same text JSON.stringify gives for sorted input. */
export function canonicalJson(value: unknown): string {
  return write(value);
}

function write(value: unknown): string {
  if (value === null || typeof value !== 'object') return value === undefined ? 'null' : (JSON.stringify(value) ?? 'null');
  if (Array.isArray(value)) {
    let s = '[';
    for (let i = 0; i < value.length; i++) s += i === 0 ? write(value[i]) : `,${write(value[i])}`;
    return `${s}]`;
  }
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  let s = '{';
  let first = true;
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined) continue;
    s += `${first ? '' : ','}${JSON.stringify(k)}:${write(v)}`;
    first = false;
  }
  return `${s}}`;
}

/** Canonical JSON of `value` restricted to what `shape` (the body we sent) names; see the header. */
export function projectedJson(value: unknown, shape: unknown): string {
  if (value === null || typeof value !== 'object' || shape === null || typeof shape !== 'object') return write(value);
  if (Array.isArray(value)) {
    if (!Array.isArray(shape) || shape.length !== value.length) return write(value);
    let s = '[';
    for (let i = 0; i < value.length; i++) s += `${i === 0 ? '' : ','}${projectedJson(value[i], shape[i])}`;
    return `${s}]`;
  }
  if (Array.isArray(shape)) return write(value);
  const keys = Object.keys(shape);
  if (keys.length === 0) return write(value);
  keys.sort();
  const obj = value as Record<string, unknown>;
  const sent = shape as Record<string, unknown>;
  let s = '{';
  let first = true;
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined || sent[k] === undefined) continue;
    s += `${first ? '' : ','}${JSON.stringify(k)}:${projectedJson(v, sent[k])}`;
    first = false;
  }
  return `${s}}`;
}

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}

/** sha256 of the canonical JSON, hex, 32 characters (128 bits). */
export function hashOf(value: unknown): string {
  return sha(write(value));
}

/** `m:` and the sha256 of what of `observed` we manage, given the body we sent (see the header). */
export function managedHash(observed: unknown, sent: unknown): string {
  return `m:${sha(projectedJson(observed, sent))}`;
}

/** A hash recorded before managed hashes: of the whole of what the gateway reported. */
export function isLegacyHash(hash: string): boolean {
  return hash !== '' && !hash.startsWith('m:');
}

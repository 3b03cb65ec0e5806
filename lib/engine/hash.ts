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
 * Both are computed without recursion, at any depth (lib/platform/json-text.ts).
 */
import { createHash } from 'node:crypto';
import { renderJson } from '../platform/json-text.js';

/** Canonical JSON: object keys sorted (UTF-16 order), no whitespace; the same text JSON.stringify gives for sorted input. */
export function canonicalJson(value: unknown): string {
  return write(value);
}

/** Iterative (lib/platform/json-text.ts): a spec nested at any depth is hashed, never a RangeError. */
function write(value: unknown): string {
  return renderJson(value, { sortKeys: true });
}

/** Canonical JSON of `value` restricted to what `shape` (the body we sent) names; see the header. */
export function projectedJson(value: unknown, shape: unknown): string {
  return renderJson(value, { sortKeys: true, shape: shape ?? null });
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

/**
 * Certificates from Secrets: an ApiDefinition's `certificate_secret_names`,
 * `client_certificate_refs`, `upstream_certificate_refs` and `pinned_public_keys_refs` name
 * Secrets (`kubernetes.io/tls`: `tls.crt`, `tls.key`) in the API's namespace, as Tyk Operator
 * took them; `certificate_secret_names` of an ApiDefinition an HTTPRoute made may also name
 * `<namespace>/<name>`, its listener's certificate (foreign-secrets.ts says when that is
 * allowed, before anything is read). Pure: the Secrets are read by the load stage and handed in.
 *
 * `secretNamesOf(spec)` lists the Secrets a spec names. `resolveCertificates` turns them into:
 * - the fields Tyk expects, holding the certificate store's ids (org id + SHA-256 of the leaf,
 *   lib/gateway/certificates.ts, known before any upload): `certificates`,
 *   `client_certificates`, `upstream_certificates`, `pinned_public_keys`, merged over the ids the
 *   spec gives itself;
 * - what to upload before the API is written, one entry per id (the PEM: the certificate, then
 *   its key when the Secret has one), held as SecretText so it never reaches a log or a report;
 * - a hash of the Secrets' content, for the API's desired hash, so a rotated Secret is a change;
 * - the object's `uses`: each Secret, and each certificate on its gateway (records index them).
 * A Secret that does not exist makes the API wait for it (nothing is sent, what the gateway has
 * stays); a Secret without `tls.crt`, without a parsable certificate, with a `tls.crt` or
 * `tls.key` above MAX_CERTIFICATE_BYTES, or without the `tls.key` a server or upstream
 * certificate needs is invalid, named. Messages never quote Secret data.
 */
import { createHash } from 'node:crypto';
import { type CertificateUpload, certificateUse, SecretText } from '../../engine/certificate-text.js';
import { MAX_CERTIFICATE_BYTES, sizeProblem } from '../../engine/input-limits.js';
import { certificateId } from '../../gateway/certificates.js';
import type { JsonObject } from '../../gateway/types.js';
import type { KubeObject } from '../../kube/types.js';
import { describeError } from '../../platform/errors.js';
import { isObject, stringItems } from '../../platform/guards.js';

export { CERTIFICATE_USE_PREFIX, type CertificateUpload, certificateUse, SecretText } from '../../engine/certificate-text.js';

/** A Secret as the load stage read it, by "namespace/name": the object, null when the API server said 404. */
export type SecretLookup = (key: string) => KubeObject | null;

export type CertificateResolution =
  | { readonly ok: true; readonly fields: JsonObject; readonly uploads: readonly CertificateUpload[]; readonly contentHash: string; readonly uses: readonly string[] }
  | { readonly ok: false; readonly waiting: string; readonly uses: readonly string[] }
  | { readonly ok: false; readonly invalid: string; readonly uses: readonly string[] };

/** The operator-only fields that name Secrets, with where their ids go and whether the Secret needs its key. */
const LIST_REFS = [
  { field: 'certificate_secret_names', into: 'certificates', needsKey: true },
  { field: 'client_certificate_refs', into: 'client_certificates', needsKey: false },
] as const;
const MAP_REFS = [
  { field: 'upstream_certificate_refs', into: 'upstream_certificates', needsKey: true },
  { field: 'pinned_public_keys_refs', into: 'pinned_public_keys', needsKey: false },
] as const;

export const SECRET_REF_FIELDS: readonly string[] = [...LIST_REFS, ...MAP_REFS].map((r) => r.field);

function entriesOf(value: unknown): [string, string][] {
  return isObject(value) ? Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== '') : [];
}

/** The Secrets a spec names, each once, in the order met. */
export function secretNamesOf(spec: Record<string, unknown> | undefined): string[] {
  return [...new Set(secretFieldsOf(spec).map((f) => f.name))];
}

/** Each Secret name a spec gives, with the field giving it. */
function secretFieldsOf(spec: Record<string, unknown> | undefined): { field: string; name: string }[] {
  if (!spec) return [];
  return [
    ...LIST_REFS.flatMap((r) => stringItems(spec[r.field]).map((name) => ({ field: r.field, name }))),
    ...MAP_REFS.flatMap((r) => entriesOf(spec[r.field]).map(([domain, name]) => ({ field: `${r.field}.${domain}`, name }))),
  ];
}

/**
 * The field where a Secret of another namespace may be named, as `<namespace>/<name>`: a
 * server certificate, and only in the ApiDefinitions an HTTPRoute makes (foreign-secrets.ts).
 */
export const FOREIGN_SECRET_FIELD = 'certificate_secret_names';

/** "namespace/name" of a name a spec gives: one with a slash names its namespace, any other is in `namespace`. */
export function secretKey(name: string, namespace: string): string {
  return name.includes('/') ? name : `${namespace}/${name}`;
}

/** The names a spec gives that are Secrets of a namespace other than `namespace`, with their fields. */
export function foreignSecretsOf(spec: Record<string, unknown> | undefined, namespace: string): { field: string; key: string }[] {
  return secretFieldsOf(spec)
    .map((f) => ({ field: f.field, key: secretKey(f.name, namespace) }))
    .filter((f) => !f.key.startsWith(`${namespace}/`));
}

function decoded(secret: KubeObject, key: string): string | undefined {
  const data = isObject(secret.data) ? secret.data[key] : undefined;
  if (typeof data !== 'string' || data === '') return undefined;
  const text = Buffer.from(data, 'base64').toString('utf8').trim();
  return text === '' ? undefined : text;
}

interface Material {
  readonly id: string;
  readonly pem: string;
  readonly hasKey: boolean;
}

/**
 * Resolves a spec's Secret references for a gateway: `lookup` answers each Secret the load
 * stage read; `orgId` is the org the gateway's store files certificates under; `gateway` names
 * the gateway in the certificates' uses.
 */
export function resolveCertificates(spec: Record<string, unknown>, namespace: string, lookup: SecretLookup, orgId: string, gateway: string): CertificateResolution {
  const names = secretNamesOf(spec);
  const qualified = (name: string) => secretKey(name, namespace);
  const secretUses = names.map((n) => `Secret/${qualified(n)}`);
  const material = new Map<string, Material>();
  for (const name of names) {
    const at = qualified(name);
    const secret = lookup(at);
    if (secret === null) return { ok: false, waiting: `Secret ${at} does not exist`, uses: secretUses };
    const crt = decoded(secret, 'tls.crt');
    if (crt === undefined) return { ok: false, invalid: `Secret ${at} has no tls.crt`, uses: secretUses };
    const key = decoded(secret, 'tls.key');
    // refused by size before any parsing (input-limits.ts)
    const big =
      sizeProblem(`Secret ${at} tls.crt`, Buffer.byteLength(crt), MAX_CERTIFICATE_BYTES) ??
      (key === undefined ? undefined : sizeProblem(`Secret ${at} tls.key`, Buffer.byteLength(key), MAX_CERTIFICATE_BYTES));
    if (big !== undefined) return { ok: false, invalid: big, uses: secretUses };
    let id: string;
    try {
      id = certificateId(crt, orgId);
    } catch (err) {
      return { ok: false, invalid: `Secret ${at}: tls.crt: ${describeError(err)}`, uses: secretUses };
    }
    material.set(name, { id, pem: key === undefined ? `${crt}\n` : `${crt}\n${key}\n`, hasKey: key !== undefined });
  }
  const fields: JsonObject = {};
  for (const ref of LIST_REFS) {
    const refs = stringItems(spec[ref.field]);
    if (refs.length === 0) continue;
    const ids = [...stringItems(spec[ref.into])];
    for (const name of refs) {
      const m = material.get(name) as Material;
      if (ref.needsKey && !m.hasKey) return { ok: false, invalid: `${ref.field}: Secret ${qualified(name)} has no tls.key`, uses: secretUses };
      if (!ids.includes(m.id)) ids.push(m.id);
    }
    fields[ref.into] = ids;
  }
  for (const ref of MAP_REFS) {
    const refs = entriesOf(spec[ref.field]);
    if (refs.length === 0) continue;
    const map: JsonObject = isObject(spec[ref.into]) ? { ...(spec[ref.into] as JsonObject) } : {};
    for (const [domain, name] of refs) {
      const m = material.get(name) as Material;
      if (ref.needsKey && !m.hasKey) return { ok: false, invalid: `${ref.field}.${domain}: Secret ${qualified(name)} has no tls.key`, uses: secretUses };
      map[domain] = m.id;
    }
    fields[ref.into] = map;
  }
  // one upload per certificate; named by two Secrets, one with its key: the one with the key
  const chosen = new Map<string, { name: string; m: Material }>();
  const content = createHash('sha256');
  for (const name of names) {
    const m = material.get(name) as Material;
    content.update(`${name}\u0000${m.pem}\u0000`);
    const known = chosen.get(m.id);
    if (!known || (m.hasKey && !known.m.hasKey)) chosen.set(m.id, { name, m });
  }
  const uploads = [...chosen.values()].map(({ name, m }): CertificateUpload => ({ id: m.id, pem: new SecretText(m.pem), secret: qualified(name) }));
  const certUses = uploads.map((u) => certificateUse(gateway, u.id));
  return { ok: true, fields, uploads, contentHash: content.digest('hex'), uses: [...secretUses, ...certUses] };
}

/**
 * Tyk's certificate store as the loopback fakes keep it: `CertStore` is the certificate
 * manager both the Tyk Gateway and the Tyk Dashboard use (Tyk's certs/manager.go), with the
 * metadata its routes answer; `gatewayCerts` is the gateway's /tyk/certs over it (the gateway
 * swagger's Certs routes; Tyk's gateway/cert.go). The Dashboard's /api/certs over the same
 * store: ./tyk-dashboard-certs.ts.
 *
 * The store (what both answer, each in its own words):
 * - `add(pem, orgId)` takes a PEM as GetCertIDAndChainPEM reads it: CERTIFICATE blocks (the
 *   first is the leaf, each must parse and must not be expired: "certificate is expired"), at
 *   most one private key ("Found multiple private keys"), which must match the leaf (Go's
 *   tls.X509KeyPair: "tls: private key does not match public key"). No certificate at all is
 *   "Failed to decode certificate. It should be PEM encoded.". The id is the org id followed by
 *   the hex SHA-256 of the leaf's DER, so the same certificate uploaded twice has one id: the
 *   second is refused with "Certificate with <id> ID already exists." (the swagger's words).
 *   A PUBLIC KEY block with certificates is refused ("Public keys can't be combined with
 *   certificates"); alone (Tyk stores public keys too, under other ids) it is not modelled.
 * - Listing by id prefix (an org, or all), metadata (CertificateMeta) and basics
 *   (CertificateBasics) by id, deletes. The PEM (private keys included) is kept as sent, for
 *   tests to inspect; it is never echoed.
 *
 * The gateway's answers:
 * - POST /tyk/certs[?org_id=] takes the PEM as the body (text/plain). Success: 200
 *   `{"id":<id>,"status":"ok","message":"Certificate added"}`; every refusal of the manager
 *   (a repeat included) is 403 with its message.
 * - GET /tyk/certs[?org_id=] lists `{"certs":[ids]}` of that org (all when no org_id);
 *   `mode=detailed` lists CertificateBasics instead (id, issuer_cn, subject_cn, dns_names,
 *   has_private, is_ca, not_before, not_after).
 * - GET /tyk/certs/{id}: CertificateMeta (id, fingerprint, has_private, is_ca, issuer, subject,
 *   not_before, not_after, dns_names); a comma-separated list of ids answers an array; an
 *   unknown single id 404 "Certificate with given SHA256 fingerprint not found.".
 * - DELETE /tyk/certs/{id}[?org_id=]: 200 `{"status":"ok","message":"removed"}`, present or not
 *   (the manager deletes the storage key without looking).
 * - Certificates live in the gateway's Redis, not its app path: no reload is needed to see
 *   one, and a gateway restart keeps them.
 */
import { createHash, createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { gatewayError as apiError, type Reply, reply } from './tyk-fake-base.js';

export interface StoredCert {
  readonly id: string;
  readonly orgId: string;
  readonly pem: string;
  readonly cert: X509Certificate;
  readonly hasPrivate: boolean;
}

/** What `CertStore.add` made of a PEM: stored, or refused with the manager's message. */
export type AddOutcome =
  | { readonly kind: 'added'; readonly cert: StoredCert }
  /** the same certificate is stored already */
  | { readonly kind: 'exists'; readonly message: string }
  /** the manager refuses the PEM */
  | { readonly kind: 'invalid'; readonly message: string }
  /** a PEM the fake does not model (a public key) */
  | { readonly kind: 'unmodelled'; readonly message: string };

const CERT_BLOCKS = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const KEY_BLOCKS = /-----BEGIN ([A-Z]+ )?PRIVATE KEY-----[\s\S]+?-----END ([A-Z]+ )?PRIVATE KEY-----/g;
const PUBLIC_KEY_BLOCK = /-----BEGIN PUBLIC KEY-----/;
const NOT_FOUND = 'Certificate with given SHA256 fingerprint not found.';

export const CERT_MESSAGES = {
  notPem: 'Failed to decode certificate. It should be PEM encoded.',
  malformed: 'x509: malformed certificate',
  expired: 'certificate is expired',
  keys: 'Found multiple private keys',
  badKey: 'tls: failed to parse private key',
  keyMismatch: 'tls: private key does not match public key',
  publicKey: 'not modelled by the fake: public keys (PUBLIC KEY blocks)',
  publicWithCerts: "Public keys can't be combined with certificates",
  notFound: NOT_FOUND,
  exists: (id: string) => `Certificate with ${id} ID already exists.`,
};

/** Go's pkix.Name as JSON, with the fields a parsed X509Certificate gives. */
function pkixName(dn: string): Record<string, unknown> {
  const parts = new Map<string, string[]>();
  for (const line of dn.split('\n')) {
    const [k, ...v] = line.split('=');
    if (k && v.length > 0) parts.set(k, [...(parts.get(k) ?? []), v.join('=')]);
  }
  return {
    Country: parts.get('C') ?? null,
    Organization: parts.get('O') ?? null,
    OrganizationalUnit: parts.get('OU') ?? null,
    Locality: parts.get('L') ?? null,
    Province: parts.get('ST') ?? null,
    StreetAddress: null,
    PostalCode: null,
    SerialNumber: '',
    CommonName: parts.get('CN')?.[0] ?? '',
    Names: null,
    ExtraNames: null,
  };
}

function dnsNames(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .filter((s) => s.startsWith('DNS:'))
    .map((s) => s.slice(4));
}

const iso = (date: string) => new Date(date).toISOString().replace('.000Z', 'Z');

/** The certificates of a PEM, leaf first; a string when one does not parse or has expired. */
function parseChain(pem: string): X509Certificate[] | string {
  const chain: X509Certificate[] = [];
  for (const [block] of pem.matchAll(CERT_BLOCKS)) {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(block);
    } catch {
      return CERT_MESSAGES.malformed;
    }
    if (new Date(cert.validTo).getTime() < Date.now()) return CERT_MESSAGES.expired;
    chain.push(cert);
  }
  return chain;
}

/** The one private key of a PEM (undefined when none); a string when there are several or it does not parse. */
function parseKey(pem: string): KeyObject | undefined | string {
  const blocks = [...pem.matchAll(KEY_BLOCKS)].map((m) => m[0]);
  if (blocks.length > 1) return CERT_MESSAGES.keys;
  if (blocks[0] === undefined) return undefined;
  try {
    return createPrivateKey(blocks[0]);
  } catch {
    return CERT_MESSAGES.badKey;
  }
}

/** The leaf a PEM names and whether a (matching) key came with it, or the manager's refusal. */
function readPem(pem: string): { leaf: X509Certificate; hasPrivate: boolean } | Exclude<AddOutcome, { kind: 'added' | 'exists' }> {
  const key = parseKey(pem);
  if (typeof key === 'string') return { kind: 'invalid', message: key };
  const chain = parseChain(pem);
  if (typeof chain === 'string') return { kind: 'invalid', message: chain };
  const leaf = chain[0];
  if (leaf === undefined) {
    return PUBLIC_KEY_BLOCK.test(pem) ? { kind: 'unmodelled', message: CERT_MESSAGES.publicKey } : { kind: 'invalid', message: CERT_MESSAGES.notPem };
  }
  if (PUBLIC_KEY_BLOCK.test(pem)) return { kind: 'invalid', message: CERT_MESSAGES.publicWithCerts };
  if (key !== undefined && !leaf.checkPrivateKey(key)) return { kind: 'invalid', message: CERT_MESSAGES.keyMismatch };
  return { leaf, hasPrivate: key !== undefined };
}

export class CertStore {
  private readonly certs = new Map<string, StoredCert>();

  /** What is stored, by id (test inspection). */
  get all(): ReadonlyMap<string, StoredCert> {
    return this.certs;
  }

  add(pem: string, orgId: string): AddOutcome {
    const read = readPem(pem);
    if ('kind' in read) return read;
    const id = orgId + createHash('sha256').update(read.leaf.raw).digest('hex');
    if (this.certs.has(id)) return { kind: 'exists', message: CERT_MESSAGES.exists(id) };
    const cert: StoredCert = { id, orgId, pem, cert: read.leaf, hasPrivate: read.hasPrivate };
    this.certs.set(id, cert);
    return { kind: 'added', cert };
  }

  get(id: string): StoredCert | undefined {
    return this.certs.get(id);
  }

  delete(id: string): boolean {
    return this.certs.delete(id);
  }

  /** The certificates whose id starts with `prefix` (an org id; '' for all), oldest first. */
  list(prefix: string): StoredCert[] {
    return [...this.certs.values()].filter((c) => c.id.startsWith(prefix));
  }
}

/** CertificateMeta: what GET of one certificate answers. */
export function certMeta(c: StoredCert): Record<string, unknown> {
  return {
    id: c.id,
    fingerprint: c.id.slice(c.orgId.length),
    has_private: c.hasPrivate,
    is_ca: c.cert.ca,
    issuer: pkixName(c.cert.issuer),
    subject: pkixName(c.cert.subject),
    not_before: iso(c.cert.validFrom),
    not_after: iso(c.cert.validTo),
    dns_names: dnsNames(c.cert),
  };
}

/** CertificateBasics: an item of a detailed list. */
export function certBasics(c: StoredCert): Record<string, unknown> {
  return {
    id: c.id,
    issuer_cn: pkixName(c.cert.issuer).CommonName,
    subject_cn: pkixName(c.cert.subject).CommonName,
    dns_names: dnsNames(c.cert),
    has_private: c.hasPrivate,
    is_ca: c.cert.ca,
    not_before: iso(c.cert.validFrom),
    not_after: iso(c.cert.validTo),
  };
}

// ---------------------------------------------------------------------------
// The gateway's /tyk/certs.

/** The gateway's answer to /tyk/certs (id undefined) or /tyk/certs/{id}. */
export function gatewayCerts(store: CertStore, method: string, id: string | undefined, query: URLSearchParams, raw: string): Reply {
  if (id === undefined) {
    if (method === 'GET') return gatewayList(store, query.get('org_id') ?? '', query.get('mode') === 'detailed');
    if (method === 'POST') return gatewayAdd(store, raw, query.get('org_id') ?? '');
    return apiError(405, 'Method not supported');
  }
  if (method === 'GET') return gatewayGet(store, id);
  if (method === 'DELETE') {
    store.delete(id);
    return reply(200, { status: 'ok', message: 'removed' });
  }
  return apiError(405, 'Method not supported');
}

function gatewayAdd(store: CertStore, pem: string, orgId: string): Reply {
  const outcome = store.add(pem, orgId);
  if (outcome.kind === 'added') return reply(200, { id: outcome.cert.id, status: 'ok', message: 'Certificate added' });
  return apiError(outcome.kind === 'unmodelled' ? 501 : 403, outcome.message);
}

function gatewayList(store: CertStore, orgId: string, detailed: boolean): Reply {
  const mine = store.list(orgId);
  return reply(200, { certs: detailed ? mine.map(certBasics) : mine.map((c) => c.id) });
}

function gatewayGet(store: CertStore, ids: string): Reply {
  const wanted = ids.split(',');
  const metas = wanted
    .map((id) => store.get(id))
    .filter((c): c is StoredCert => c !== undefined)
    .map(certMeta);
  if (wanted.length > 1) return reply(200, metas);
  return metas[0] ? reply(200, metas[0]) : apiError(404, NOT_FOUND);
}

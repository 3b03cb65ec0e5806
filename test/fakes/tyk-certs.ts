/**
 * The Tyk Gateway's certificate store, as the loopback fake serves it under /tyk/certs (the
 * gateway swagger's Certs routes; Tyk's gateway/cert.go and certs/manager.go).
 *
 * Models:
 * - POST /tyk/certs[?org_id=] takes a PEM (text/plain): a certificate, optionally with its
 *   private key. The id is the org id followed by the hex SHA-256 of the certificate's DER, so
 *   the same certificate uploaded twice has one id: the second upload is refused with 403
 *   "Certificate with <id> ID already exists.". A body with no parsable certificate is 403 too
 *   (Tyk answers the certificate manager's error with 403); the message here is the fake's.
 *   Success: 200 `{"id":<id>,"status":"ok","message":"Certificate added"}`.
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
 * The PEM (private keys included) is kept as sent, for tests to inspect; it is never echoed.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { gatewayError as apiError, type Reply, reply } from './tyk-fake-base.js';

export interface StoredCert {
  readonly id: string;
  readonly orgId: string;
  readonly pem: string;
  readonly cert: X509Certificate;
  readonly hasPrivate: boolean;
}

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;
const KEY_BLOCK = /-----BEGIN ([A-Z]+ )?PRIVATE KEY-----/;
const NOT_FOUND = 'Certificate with given SHA256 fingerprint not found.';

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

export class CertStore {
  private readonly certs = new Map<string, StoredCert>();

  /** What is stored, by id (test inspection). */
  get all(): ReadonlyMap<string, StoredCert> {
    return this.certs;
  }

  handle(method: string, id: string | undefined, query: URLSearchParams, raw: string): Reply {
    if (id === undefined) {
      if (method === 'GET') return this.list(query.get('org_id') ?? '', query.get('mode') === 'detailed');
      if (method === 'POST') return this.add(raw, query.get('org_id') ?? '');
      return apiError(405, 'Method not supported');
    }
    if (method === 'GET') return this.get(id);
    if (method === 'DELETE') {
      this.certs.delete(id);
      return reply(200, { status: 'ok', message: 'removed' });
    }
    return apiError(405, 'Method not supported');
  }

  private add(pem: string, orgId: string): Reply {
    const block = CERT_BLOCK.exec(pem)?.[0];
    let cert: X509Certificate;
    try {
      if (block === undefined) throw new Error('no certificate');
      cert = new X509Certificate(block);
    } catch {
      return apiError(403, 'Failed to decode certificate: no PEM certificate block found');
    }
    const id = orgId + createHash('sha256').update(cert.raw).digest('hex');
    if (this.certs.has(id)) return apiError(403, `Certificate with ${id} ID already exists.`);
    this.certs.set(id, { id, orgId, pem, cert, hasPrivate: KEY_BLOCK.test(pem) });
    return reply(200, { id, status: 'ok', message: 'Certificate added' });
  }

  private list(orgId: string, detailed: boolean): Reply {
    const mine = [...this.certs.values()].filter((c) => c.id.startsWith(orgId));
    if (!detailed) return reply(200, { certs: mine.map((c) => c.id) });
    return reply(200, {
      certs: mine.map((c) => ({
        id: c.id,
        issuer_cn: pkixName(c.cert.issuer).CommonName,
        subject_cn: pkixName(c.cert.subject).CommonName,
        dns_names: dnsNames(c.cert),
        has_private: c.hasPrivate,
        is_ca: c.cert.ca,
        not_before: iso(c.cert.validFrom),
        not_after: iso(c.cert.validTo),
      })),
    });
  }

  private get(ids: string): Reply {
    const wanted = ids.split(',');
    const metas = wanted
      .map((id) => this.certs.get(id))
      .filter((c): c is StoredCert => c !== undefined)
      .map(meta);
    if (wanted.length > 1) return reply(200, metas);
    return metas[0] ? reply(200, metas[0]) : apiError(404, NOT_FOUND);
  }
}

function meta(c: StoredCert): Record<string, unknown> {
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

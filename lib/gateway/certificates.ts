/**
 * Certificates in a gateway's certificate store (Tyk Gateway /tyk/certs: ./tyk-ce.ts; Tyk
 * Dashboard /api/certs: ./tyk-dashboard.ts), for APIs that name TLS Secrets. `certificateId`
 * computes the id Tyk gives a PEM: the org id followed by the hex SHA-256 of the certificate's
 * DER (the first CERTIFICATE block: the leaf), so a run knows a certificate's id before any
 * upload, and an upload repeated after a crash is recognised. The gateway stores under the
 * org a call names; the Dashboard under its key's org, whatever a call names (its client
 * ignores `orgId`).
 *
 * Guarantees of a CertificateStore: `uploadCertificate` is idempotent (the same certificate
 * again answers its id, with `created` false: the store had it already, from us or anyone); `removeCertificate` of an absent id succeeds; errors never carry the
 * PEM (private keys) or the gateway secret.
 * Throws InvalidSpecError (no certificate in the PEM), GatewayRejectedError, GatewayApiError,
 * GatewayUnavailableError.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { InvalidSpecError } from '../platform/errors.js';

const BEGIN = '-----BEGIN CERTIFICATE-----';
const END = '-----END CERTIFICATE-----';

/**
 * The first CERTIFICATE block of a PEM: from the first BEGIN line to the first END line after
 * it. Two indexOf scans, linear in the text whatever it holds (a text of repeated BEGIN lines
 * made the lazy regex this replaces quadratic).
 */
export function firstCertificateBlock(pem: string): string | undefined {
  const begin = pem.indexOf(BEGIN);
  if (begin < 0) return undefined;
  // at least one character between the lines, as a PEM body has
  const end = pem.indexOf(END, begin + BEGIN.length + 1);
  return end < 0 ? undefined : pem.slice(begin, end + END.length);
}

/** The id Tyk gives `pem` in `orgId`'s store; InvalidSpecError when it holds no parsable certificate (the message never quotes it). */
export function certificateId(pem: string, orgId = ''): string {
  const block = firstCertificateBlock(pem);
  if (block === undefined) throw new InvalidSpecError('no PEM certificate block (BEGIN CERTIFICATE) found');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(block);
  } catch {
    throw new InvalidSpecError('the PEM certificate block is not a parsable X.509 certificate');
  }
  return orgId + createHash('sha256').update(cert.raw).digest('hex');
}

/** What an upload did: the certificate's id, and whether this upload put it there. */
export interface Uploaded {
  readonly id: string;
  readonly created: boolean;
}

export interface CertificateStore {
  /** Uploads a PEM (a certificate, optionally followed by its private key) to the store. */
  uploadCertificate(pem: string, orgId?: string): Promise<Uploaded>;
  hasCertificate(id: string): Promise<boolean>;
  removeCertificate(id: string, orgId?: string): Promise<void>;
  /** The ids of the org's certificates (all, without an org). */
  listCertificates(orgId?: string): Promise<string[]>;
}

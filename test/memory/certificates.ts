/**
 * A certificate store (lib/gateway/certificates.ts CertificateStore) in memory, as Tyk's:
 * a PEM is filed under certificateId(pem, orgId) (the org the upload names, none by default);
 * uploading one it already has answers `created: false`; a removal of one it does not have is
 * no error. It counts uploads, keeps each upload's and removal's org (`orgs`, `removals`) and
 * can fail its next removals (`failRemovals`) with a GatewayApiError 500.
 * Give it to a gateway with ./delegating-gateway.ts (or FastWorld's `certificates` options).
 */
import { type CertificateStore, certificateId, type Uploaded } from '../../lib/gateway/certificates.js';
import { GatewayApiError } from '../../lib/platform/errors.js';

export class MemoryCertificates implements CertificateStore {
  /** the store's certificates: id → PEM */
  readonly certs = new Map<string, string>();
  uploads = 0;
  /** the org each upload named, in order ('' for none) */
  readonly orgs: string[] = [];
  /** each removal asked for, in order */
  readonly removals: { id: string; orgId: string }[] = [];
  /** removals still to fail */
  failRemovals = 0;

  async uploadCertificate(pem: string, orgId = ''): Promise<Uploaded> {
    this.uploads++;
    this.orgs.push(orgId);
    const id = certificateId(pem, orgId);
    const created = !this.certs.has(id);
    this.certs.set(id, pem);
    return { id, created };
  }
  async hasCertificate(id: string): Promise<boolean> {
    return this.certs.has(id);
  }
  async removeCertificate(id: string, orgId = ''): Promise<void> {
    this.removals.push({ id, orgId });
    if (this.failRemovals > 0) {
      this.failRemovals--;
      throw new GatewayApiError(500, `certificate ${id}: 500 removal failed`);
    }
    this.certs.delete(id);
  }
  async listCertificates(): Promise<string[]> {
    return [...this.certs.keys()];
  }
}

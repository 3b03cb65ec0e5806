/**
 * A Gateway (lib/gateway/types.ts) that passes every call to another one, for tests that need
 * the in-memory gateways as some client would show them: with a certificate store
 * (`certificates`, e.g. ./certificates.ts MemoryCertificates), or (subclassing) with a changed
 * read such as listed objects' digests. Reads and writes are the inner gateway's, unchanged; an
 * upsert's hint is not passed on (the in-memory gateways take none).
 */
import type { CertificateStore } from '../../lib/gateway/certificates.js';
import type { Gateway, GatewayObjectKind, JsonObject, ListVisitor, UpsertHint } from '../../lib/gateway/types.js';

export class DelegatingGateway implements Gateway {
  constructor(
    protected readonly inner: Gateway,
    readonly certificates?: CertificateStore,
  ) {}
  get name(): string {
    return this.inner.name;
  }
  get reloadRequired(): boolean {
    return this.inner.reloadRequired;
  }
  list(kind: GatewayObjectKind, visit?: ListVisitor): Promise<Map<string, JsonObject>> {
    return this.inner.list(kind, visit);
  }
  get(kind: GatewayObjectKind, id: string): Promise<JsonObject | null> {
    return this.inner.get(kind, id);
  }
  upsert(kind: GatewayObjectKind, id: string, body: JsonObject, _hint?: UpsertHint): Promise<void> {
    return this.inner.upsert(kind, id, body);
  }
  remove(kind: GatewayObjectKind, id: string): Promise<void> {
    return this.inner.remove(kind, id);
  }
  reload(): Promise<void> {
    return this.inner.reload();
  }
  ping(): Promise<void> {
    return this.inner.ping();
  }
}

/**
 * Certificates from Secrets through whole Runs (lib/engine/certificates.ts, RunContext.once),
 * on an in-memory gateway given a certificate store: a certificate that two APIs of one run
 * name is uploaded once (the run's work done once per gateway and id), before the APIs that
 * name it are written; the next run, finding it in the store, uploads nothing.
 */
import t from 'tap';
import { type CertificateStore, certificateId, type Uploaded } from '../../lib/gateway/certificates.js';
import type { Gateway, GatewayObjectKind, JsonObject, ListVisitor, UpsertHint } from '../../lib/gateway/types.js';
import { apiDefinition, defaultIdOf, secret } from '../fixtures/builders.js';
import { PEM } from '../fixtures/pem.js';
import { FastWorld, type MemoryGateway, reported } from './world.js';

/** A certificate store in memory, as Tyk's: ids by certificateId, an upload of one it has answers created false. */
class MemoryCertificates implements CertificateStore {
  readonly certs = new Map<string, string>();
  uploads = 0;
  async uploadCertificate(pem: string, orgId = ''): Promise<Uploaded> {
    this.uploads++;
    const id = certificateId(pem, orgId);
    const created = !this.certs.has(id);
    this.certs.set(id, pem);
    return { id, created };
  }
  async hasCertificate(id: string): Promise<boolean> {
    return this.certs.has(id);
  }
  async removeCertificate(id: string): Promise<void> {
    this.certs.delete(id);
  }
  async listCertificates(): Promise<string[]> {
    return [...this.certs.keys()];
  }
}

/** The in-memory gateway with `certificates`. */
class GatewayWithCertificates implements Gateway {
  constructor(
    private readonly inner: MemoryGateway,
    readonly certificates: MemoryCertificates,
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
    // the in-memory gateways take no hint
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

t.test('a certificate two APIs of one run name is uploaded once, then named by both; the next run uploads nothing', async (t) => {
  const certs = new MemoryCertificates();
  const w = new FastWorld({ defaultGateway: (g) => new GatewayWithCertificates(g, certs) });
  w.apply(secret('shared-tls').tls(PEM.server, PEM.serverKey).build());
  for (const n of ['a', 'b'])
    w.apply(
      apiDefinition(n)
        .patchSpec({ certificate_secret_names: ['shared-tls'] })
        .build(),
    );
  const report = await w.run();
  t.match(reported(report, 'a'), { action: 'CREATE', result: 'synced' });
  t.match(reported(report, 'b'), { action: 'CREATE', result: 'synced' });
  const id = certificateId(PEM.server);
  t.equal(certs.uploads, 1, 'one upload for both');
  t.same([...certs.certs.keys()], [id]);
  t.same(report.gateway.writes, 3, 'two APIs and one certificate');
  for (const n of ['a', 'b']) t.match(await w.gateway.get('api', defaultIdOf(n)), { certificates: [id] });

  const next = await w.run();
  t.same(next.counts, { unchanged: 2 });
  t.equal(certs.uploads, 1, 'none in the next run');
});

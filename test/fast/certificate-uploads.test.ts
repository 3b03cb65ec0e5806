/**
 * Certificates from Secrets through whole Runs (lib/engine/certificates.ts, RunContext.once),
 * on an in-memory gateway given a certificate store (test/memory/certificates.ts): a
 * certificate that two APIs of one run name is uploaded once (the run's work done once per
 * gateway and id), before the APIs that name it are written; the next run, finding it in the
 * store, uploads nothing.
 */
import t from 'tap';
import { certificateId } from '../../lib/gateway/certificates.js';
import { apiDefinition, defaultIdOf, secret } from '../fixtures/builders.js';
import { PEM } from '../fixtures/pem.js';
import { MemoryCertificates } from '../memory/certificates.js';
import { FastWorld, reported } from './world.js';

t.test('a certificate two APIs of one run name is uploaded once, then named by both; the next run uploads nothing', async (t) => {
  const certs = new MemoryCertificates();
  const w = new FastWorld({ certificates: certs });
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

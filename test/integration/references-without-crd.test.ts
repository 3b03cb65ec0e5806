/**
 * A cluster without Gateway API's ReferenceGrant CRD (the fake API server answers 404 for
 * ReferenceGrants, as a real one does): there are no grants, every cross-namespace reference is
 * refused (RefNotPermitted), and the log says so once per process. Not in the real tier, whose
 * server has the CRD installed.
 */
import t from 'tap';
import type { RunReport } from '../../lib/engine/types.js';
import { apiDefinition, conditionOf, securityPolicy } from '../fixtures/builders.js';
import { capturingLogger } from '../harness/log.js';
import { RESYNC_TOKEN, startWorld } from '../harness/world.js';

t.test('no ReferenceGrant CRD installed: no grants, every cross-namespace reference refused, said once in the log', async (t) => {
  const log = capturingLogger();
  const w = await startWorld({ log });
  t.teardown(() => w.close());
  await w.create(apiDefinition('payments').inNamespace('team-b').build());
  await w.create(securityPolicy('pay').inNamespace('team-a').granting('team-b/payments').build());
  await w.create(securityPolicy('pay2').inNamespace('team-a').granting('team-b/payments').build());
  const resync = async (): Promise<RunReport> => (await w.resync({}, RESYNC_TOKEN)).body;
  await resync();
  const report = await resync();
  for (const name of ['pay', 'pay2']) {
    t.match(
      report.objects.find((o) => o.name === name),
      { result: 'failed', code: 'REF_NOT_PERMITTED' },
      `${name}: RefNotPermitted`,
    );
    t.match(conditionOf(await w.get(name, 'team-a', 'SecurityPolicy'), 'Synced'), { status: 'False', reason: 'RefNotPermitted' });
  }
  t.match(
    report.objects.find((o) => o.name === 'payments'),
    { result: 'unchanged' },
  );
  t.equal(w.tyk.loaded('policy').size, 0, 'no policy written');
  t.equal(log.entries.filter((e) => /ReferenceGrants are not served/.test(String(e.msg))).length, 1, 'one log line, in two runs');
});

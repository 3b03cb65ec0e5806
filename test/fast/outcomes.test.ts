/**
 * How a run ends for each object once its write is done (lib/engine/finalize.ts): the
 * record it saves, the status it patches and the id that status names, the finalizer it
 * removes, the report and the Events. Each test is a whole Run in process (./world.ts) with
 * one thing going wrong, or right, at the end.
 */
import t from 'tap';
import type { JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { GatewayApiError, StoreUnavailableError } from '../../lib/platform/errors.js';
import type { MemoryStore } from '../../lib/store/memory.js';
import type { Store } from '../../lib/store/types.js';
import { apiDefinition, defaultIdOf, FINALIZER, securityPolicy } from '../fixtures/builders.js';
import type { MemoryTykDashboard, MemoryTykGateway } from '../memory/gateway.js';
import { kubeFailure } from '../memory/kube.js';
import { FastWorld, reported } from './world.js';

/** The store the run uses, over the world's MemoryStore, with deleteRecord failing as a lost Redis does. */
function losingDeletes(inner: MemoryStore): Store {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'deleteRecord') return async () => Promise.reject(new StoreUnavailableError('redis deleteRecord failed: connection lost'));
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

t.test('a status patch the API server refuses: the write stands, the report and a Warning say the status was not saved', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('x').build());
  w.kube.inject({ op: 'patchStatus', error: () => kubeFailure({ status: 422 }, 'patch apidefinitions "x" status') });
  const report = await w.run();
  const x = reported(report, 'x');
  t.match(x, { result: 'synced', statusError: /422/ }, 'synced, and the refused status named in the report');
  t.equal(w.gateway.count('upsert'), 1, 'the API was written');
  t.match(await w.record(API_DEFINITION, 'x'), { result: 'synced' }, 'the record is saved');
  t.notOk(w.api('x')?.status?.api_id, 'the status was not saved');
  const warnings = w.kube.eventsAbout('ApiDefinition', 'x').filter((e) => e.reason === 'StatusPatchFailed');
  t.equal(warnings.length, 1, 'one StatusPatchFailed Warning');
  t.match(warnings[0]?.message, /^status not saved: .*422/);

  const again = await w.run();
  t.equal(reported(again, 'x').statusError, undefined, 'the next run patches the status and reports no status error');
  t.match(w.api('x')?.status, { api_id: defaultIdOf('x'), latestTransaction: { status: 'Successful' } });
});

t.test('a synced object whose status patch goes through reports no status error and no StatusPatchFailed', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('x').build());
  const report = await w.run();
  t.notOk('statusError' in reported(report, 'x'), 'no statusError key at all');
  t.same(
    w.kube.eventsAbout('ApiDefinition', 'x').map((e) => e.reason),
    ['Synced'],
    'only the Synced Event',
  );
});

t.test('deleted in the cluster: the gateway object goes, then the finalizer, then the record', async (t) => {
  t.test('the finalizer removal refused: reported failed with the reason, record kept, the next run finishes the job', async (t) => {
    const w = new FastWorld();
    w.apply(apiDefinition('x').build());
    await w.run();
    w.delete(API_DEFINITION, 'x');
    w.kube.inject({ op: 'removeFinalizer', error: () => kubeFailure({ status: 403 }, 'patch apidefinitions "x"') });
    const report = await w.run();
    t.match(reported(report, 'x'), { action: 'DELETE', result: 'failed', error: /403/ });
    t.equal(w.gateway.count('remove'), 1, 'the gateway object was deleted');
    t.ok(await w.record(API_DEFINITION, 'x'), 'the record is kept until the finalizer is gone');
    t.ok(w.api('x')?.metadata.finalizers?.includes(FINALIZER), 'the finalizer is still there');

    const again = await w.run();
    t.match(reported(again, 'x'), { action: 'DELETE', result: 'deleted' });
    t.equal(w.api('x'), undefined, 'the resource is gone with its finalizer');
    t.equal(await w.record(API_DEFINITION, 'x'), null, 'and so is the record');
  });

  t.test('deleted, but the gateway still serves it after every reload: not reported deleted, the record and finalizer kept', async (t) => {
    const w = new FastWorld();
    w.apply(apiDefinition('x').build());
    await w.run();
    w.delete(API_DEFINITION, 'x');
    (w.gateway as MemoryTykGateway).dropReloads(1_000);
    const report = await w.run();
    const x = reported(report, 'x');
    t.equal(x.action, 'DELETE');
    t.not(x.result, 'deleted', `still served: ${x.result}`);
    t.ok(await w.record(API_DEFINITION, 'x'), 'the record is kept');
    t.ok(w.api('x')?.metadata.finalizers?.includes(FINALIZER), 'the finalizer is kept');
  });

  t.test('a failed gateway delete: a DeleteFailed Warning; the deleting object’s status is left as it was', async (t) => {
    const w = new FastWorld();
    w.apply(apiDefinition('x').build());
    await w.run();
    const status = w.api('x')?.status;
    w.delete(API_DEFINITION, 'x');
    w.gateway.inject({ op: 'remove', error: () => new GatewayApiError(503, 'gateway default: delete API: 503 unavailable') });
    const report = await w.run();
    t.match(reported(report, 'x'), { action: 'DELETE', result: 'failed', error: /503/ });
    t.same(w.api('x')?.status, status, 'status not patched');
    t.match(
      w.kube.eventsAbout('ApiDefinition', 'x').find((e) => e.reason === 'DeleteFailed'),
      { type: 'Warning', message: /503/ },
    );
  });

  t.test('the store lost while forgetting the record: the run fails with the store error, nothing is reported deleted', async (t) => {
    const w = new FastWorld({ store: losingDeletes });
    w.apply(apiDefinition('x').build());
    await w.run();
    w.delete(API_DEFINITION, 'x');
    await t.rejects(w.run(), StoreUnavailableError);
    t.ok(await w.record(API_DEFINITION, 'x'), 'the record is still there for the next run');
  });

  t.test('an object gone from the cluster (no finalizer to remove): deleted from the gateway, no finalizer call', async (t) => {
    const w = new FastWorld();
    w.apply(apiDefinition('x').build());
    await w.run();
    w.remove(API_DEFINITION, 'x');
    w.resetCounts();
    const report = await w.run();
    t.match(reported(report, 'x'), { action: 'DELETE', result: 'deleted' });
    t.equal(w.kube.count('removeFinalizer'), 0, 'nothing to remove a finalizer from');
    t.equal(await w.record(API_DEFINITION, 'x'), null);
  });

  t.end();
});

t.test('the id a status names', async (t) => {
  t.test('a record kept from before the id was known: the status names the id the object has', async (t) => {
    const w = new FastWorld();
    w.apply(apiDefinition('x').build());
    await w.run();
    await w.editRecord(API_DEFINITION, 'x', (r) => ({ ...r, id: '' }));
    const current = w.api('x');
    if (!current) throw new Error('no x');
    w.put({ ...current, status: {} });
    const report = await w.run();
    t.match(reported(report, 'x'), { id: defaultIdOf('x') });
    t.match(w.api('x')?.status, { api_id: defaultIdOf('x') }, 'the status names the id, not the empty one recorded');
  });

  t.test('a policy on the Dashboard: the status names the Dashboard’s own _id', async (t) => {
    const w = new FastWorld({ mode: 'pro' });
    w.apply(apiDefinition('x').build());
    w.apply(securityPolicy('gold').granting('x').build());
    await w.run();
    const [native] = [...(w.gateway as MemoryTykDashboard).policies().values()].map((p) => p._id);
    t.type(native, 'string');
    t.equal(w.policy('gold')?.status?.pol_id, native, 'pol_id is the Dashboard’s _id');
    t.equal(w.api('x')?.status?.api_id, defaultIdOf('x'), 'an API keeps our id');
  });
  t.end();
});

/** Makes the gateway rename x's listen path on the read-back that follows the next write (as Tyk does for a clash). */
function renamingNextWrite(w: FastWorld): void {
  const gw = w.gateway as MemoryTykGateway;
  const rename = (o: JsonObject) => {
    o.proxy = { ...(o.proxy as JsonObject), listen_path: '/x-renamed' };
  };
  let written = false;
  gw.inject({
    op: '*',
    times: Number.POSITIVE_INFINITY,
    hook: (call) => {
      if (call.op === 'upsert') written = true;
      else if (written && (call.op === 'get' || call.op === 'list')) {
        written = false;
        gw.editFile('api', defaultIdOf('x'), rename);
        gw.editLoaded('api', defaultIdOf('x'), rename);
      }
    },
  });
}

t.test('a write the gateway changes on the way (Tyk renames a clashing listen path): diverged, and the report carries the record’s error', async (t) => {
  t.test('a create', async (t) => {
    const w = new FastWorld();
    renamingNextWrite(w);
    w.apply(apiDefinition('x').build());
    const report = await w.run();
    const rec = await w.record(API_DEFINITION, 'x');
    t.match(rec, { result: 'diverged', error: /listen_path/ });
    t.match(reported(report, 'x'), { result: 'diverged', error: rec?.error }, 'the report says what the record says');
    t.match(w.kube.eventsAbout('ApiDefinition', 'x'), [{ reason: 'Diverged', message: rec?.error }]);
  });
  t.test('an update: the read-back moved from what was there before, so it is visible at once, and diverged', async (t) => {
    const w = new FastWorld();
    w.apply(apiDefinition('x').build());
    await w.run();
    renamingNextWrite(w);
    w.updateSpec(API_DEFINITION, 'x', (s) => ({ ...s, proxy: { ...(s.proxy as JsonObject), target_url: 'http://example.com' } }));
    w.resetCounts();
    const report = await w.run();
    t.match(reported(report, 'x'), { action: 'UPDATE', result: 'diverged', error: /listen_path/ });
    t.equal(w.gateway.count('reload'), 1, 'no reload retries');
  });
  t.end();
});

t.test('a retry whose earlier write had landed after all: the same body read back is synced at once, with one reload', async (t) => {
  const w = new FastWorld();
  w.apply(apiDefinition('x').build());
  await w.run();
  await w.editRecord(API_DEFINITION, 'x', (r) => ({ ...r, result: 'failed', failures: 1, retryAt: w.clock.now() - 1, error: 'write API: 503 boom' }));
  w.resetCounts();
  const report = await w.run();
  t.match(reported(report, 'x'), { action: 'UPDATE', reason: 'retrying after failure', result: 'synced' });
  t.equal(w.gateway.count('upsert'), 1);
  t.equal(w.gateway.count('reload'), 1, 'visible after the first reload: no retries');
  t.match(await w.record(API_DEFINITION, 'x'), { result: 'synced', failures: 0 });
});

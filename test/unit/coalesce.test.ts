/**
 * lib/triggers/coalesce.ts: scopes merge into their union; one run at a time, what is asked
 * meanwhile taken by one next run; each caller gets the report (or the error) of the run that
 * covered it; the webhook triggers share the queue, a run started with its first scope's trigger.
 */
import t from 'tap';
import type { RunReport, RunScope, Trigger } from '../../lib/engine/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SUBGRAPH } from '../../lib/kinds/graphs/kinds.js';
import { INGRESS } from '../../lib/kinds/ingress/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { Coalescer, mergeScopes, ScopeUnion } from '../../lib/triggers/coalesce.js';

const ref = (name: string, kind = API_DEFINITION, namespace = 'default') => ({ kind, namespace, name });

t.test('mergeScopes: the union, each object once; everything wins', async (t) => {
  t.same(mergeScopes({ refs: [ref('a'), ref('b')] }, { refs: [ref('b'), ref('a', SECURITY_POLICY)] }), { refs: [ref('a'), ref('b'), ref('a', SECURITY_POLICY)] }, 'same name, other kind: kept apart');
  t.same(mergeScopes({ refs: [ref('a')] }, { refs: [ref('a', API_DEFINITION, 'other')] }).refs?.length, 2, 'same name, other namespace: kept apart');
  t.same(mergeScopes({ namespaces: ['x'] }, { namespaces: ['y', 'x'], refs: [ref('a')] }), { namespaces: ['x', 'y'], refs: [ref('a')] });
  t.same(
    mergeScopes(
      { cluster: [{ kind: SUBGRAPH, namespace: 'n', name: 's' }] },
      {
        cluster: [
          { kind: SUBGRAPH, namespace: 'n', name: 's' },
          { kind: INGRESS, namespace: 'n', name: 'i' },
        ],
      },
    ),
    {
      cluster: [
        { kind: SUBGRAPH, namespace: 'n', name: 's' },
        { kind: INGRESS, namespace: 'n', name: 'i' },
      ],
    },
  );
  t.same(mergeScopes({ refs: [ref('a')] }, { all: true }), { all: true });
  t.same(mergeScopes({ all: true }, { namespaces: ['x'] }), { all: true });
  t.same(mergeScopes({}, {}), {}, 'nothing stays nothing: no empty lists made up');
});

/** A run starter whose runs end when the test says. */
function controlled() {
  const started: { trigger: Trigger; scope: RunScope; finish(report?: Partial<RunReport>): void; fail(err: Error): void }[] = [];
  let running = 0;
  let most = 0;
  const start = (trigger: Trigger, scope: RunScope): Promise<RunReport> =>
    new Promise<RunReport>((resolve, reject) => {
      running++;
      most = Math.max(most, running);
      const done = () => running--;
      started.push({
        trigger,
        scope,
        finish: (report = {}) => {
          done();
          resolve({ runId: `run-${started.length}`, ...report } as RunReport);
        },
        fail: (err) => {
          done();
          reject(err);
        },
      });
    });
  return { started, start, most: () => most };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

t.test('one run at a time; what is asked meanwhile is one next run over the union', async (t) => {
  const c = controlled();
  const q = new Coalescer(c.start);
  const first = q.submit('watch', { refs: [ref('a')] });
  t.equal(c.started.length, 1, 'the first starts at once');
  const later = [q.submit('watch', { refs: [ref('b')] }), q.submit('watch', { refs: [ref('c'), ref('b')] }), q.submit('watch', { namespaces: ['team'] })];
  await tick();
  t.equal(c.started.length, 1, 'nothing else starts while it runs');
  t.equal(q.waiting(), 3);
  c.started[0]?.finish({ runId: 'one' } as Partial<RunReport>);
  t.match(await first, { runId: 'one' });
  await tick();
  t.equal(c.started.length, 2, 'then one run for the three waiting');
  t.same(c.started[1]?.scope, { namespaces: ['team'], refs: [ref('b'), ref('c')] }, 'over their union');
  t.equal(q.waiting(), 0);
  c.started[1]?.finish({ runId: 'two' } as Partial<RunReport>);
  t.same(
    (await Promise.all(later)).map((r) => r.runId),
    ['two', 'two', 'two'],
    'each gets the report of the run that covered it',
  );
  t.equal(c.most(), 1, 'never two at once');
  // idle again: the next starts at once
  const again = q.submit('watch', { refs: [ref('d')] });
  t.equal(c.started.length, 3);
  c.started[2]?.finish();
  await again;
});

t.test('a run that fails rejects the callers it covered, and the next run still happens', async (t) => {
  const c = controlled();
  const q = new Coalescer(c.start);
  const first = q.submit('audit', { refs: [ref('a')] });
  const second = q.submit('audit', { refs: [ref('b')] });
  c.started[0]?.fail(new Error('store down'));
  await t.rejects(first, /store down/);
  await tick();
  t.equal(c.started.length, 2, 'the waiting one runs');
  c.started[1]?.finish({ runId: 'ok' } as Partial<RunReport>);
  t.match(await second, { runId: 'ok' });
});

t.test('the webhook triggers share the queue: an object named by an audit and a watch event is read by one run', async (t) => {
  const c = controlled();
  const q = new Coalescer(c.start);
  const first = q.submit('audit', { refs: [ref('a')] });
  const w = q.submit('watch', { refs: [ref('a'), ref('b')] });
  const a = q.submit('audit', { refs: [ref('b')] });
  const e = q.submit('cloudevents', { refs: [ref('c')] });
  t.same(
    c.started.map((s) => s.trigger),
    ['audit'],
    'a watch delivery waits for the audit run',
  );
  t.equal(q.waiting(), 3);
  c.started[0]?.finish({ runId: 'one' } as Partial<RunReport>);
  await first;
  await tick();
  t.equal(c.started.length, 2, 'one next run for the three waiting, whatever their triggers');
  t.equal(c.started[1]?.trigger, 'watch', 'started with the trigger of the first scope it covers');
  t.same(c.started[1]?.scope, { refs: [ref('a'), ref('b'), ref('c')] }, 'each object once');
  c.started[1]?.finish({ runId: 'two' } as Partial<RunReport>);
  t.same(
    (await Promise.all([w, a, e])).map((r) => r.runId),
    ['two', 'two', 'two'],
  );
  t.equal(c.most(), 1, 'never two at once');
});

t.test('ScopeUnion: one scope at a time, the same union as mergeScopes folded', async (t) => {
  const scopes = Array.from({ length: 300 }, (_, i) => ({ refs: [ref(`o-${i % 100}`)], ...(i % 50 === 0 ? { namespaces: [`ns-${i % 3}`] } : {}) }));
  const folded = scopes.reduce<RunScope>((a, b) => mergeScopes(a, b), {});
  const union = new ScopeUnion();
  for (const s of scopes) union.add(s);
  t.same(union.scope(), folded);
  t.equal(union.scope().refs?.length, 100, 'each object once');
  t.same(union.scope().namespaces, ['ns-0', 'ns-2', 'ns-1'], 'in first-seen order');
  t.same(new ScopeUnion().add({ refs: [] }).scope(), { refs: [] }, 'an empty list named stays named');
  t.same(
    union
      .add({ all: true })
      .add({ refs: [ref('late')] })
      .scope(),
    { all: true },
    'everything, then more: everything',
  );
});

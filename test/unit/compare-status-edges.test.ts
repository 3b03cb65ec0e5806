/**
 * Comparing what was sent with what the gateway reports, and the status patch, at the edges of
 * their rules (test/unit/payload-compare-status.test.ts states them).
 */
import t from 'tap';
import { statusPatch, transactionFor } from '../../lib/engine/status.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { SECURITY_POLICY } from '../../lib/kinds/security-policy/kind.js';
import { describeDifferences, sentFieldDifferences } from '../../lib/platform/compare.js';
import { record } from '../fixtures/builders.js';

t.test('compare: empty values are equal to each other, not to a value', async (t) => {
  for (const [sent, reported] of [
    [null, ''],
    ['', undefined],
    [[], {}],
    [{}, null],
    [undefined, []],
  ] as const) {
    t.same(sentFieldDifferences({ f: sent }, { f: reported }), [], `${JSON.stringify(sent)} ~ ${JSON.stringify(reported)}`);
  }
  t.same(sentFieldDifferences({ f: '' }, { f: 'x' }), [{ path: 'f', sent: '', reported: 'x' }]);
  t.same(sentFieldDifferences({ f: [] }, { f: [1] }), [{ path: 'f', sent: [], reported: [1] }]);
  t.same(sentFieldDifferences({ f: {} }, { f: { a: 1 } }), [], 'an empty object sent names no field');
  t.same(sentFieldDifferences({ f: 0 }, { f: null }), [{ path: 'f', sent: 0, reported: null }], '0 and false are values');
  t.same(sentFieldDifferences({ f: false }, { f: '' }), [{ path: 'f', sent: false, reported: '' }]);
  t.same(sentFieldDifferences({ f: 'x' }, { f: null }), [{ path: 'f', sent: 'x', reported: null }]);
});

t.test('compare: nested paths, arrays of objects, and shape changes', async (t) => {
  t.same(sentFieldDifferences({ a: { b: { c: 1 } } }, { a: { b: { c: 2 } } }), [{ path: 'a.b.c', sent: 1, reported: 2 }]);
  t.same(sentFieldDifferences({ l: [{ x: 1 }, { x: 2 }] }, { l: [{ x: 1 }, { x: 3, y: 0 }] }), [{ path: 'l[1].x', sent: 2, reported: 3 }]);
  t.same(sentFieldDifferences({ o: { a: 1 } }, { o: 'flat' }), [{ path: 'o', sent: { a: 1 }, reported: 'flat' }]);
  t.same(sentFieldDifferences({ o: [1] }, { o: { 0: 1 } }), [{ path: 'o', sent: [1], reported: { 0: 1 } }]);
  t.same(sentFieldDifferences({ o: { a: 1 } }, { o: { a: 1 } }), []);
  t.same(
    sentFieldDifferences({ z: 1, a: 1 }, { z: 2, a: 2 }).map((d) => d.path),
    ['a', 'z'],
    'in key order',
  );
  t.same(sentFieldDifferences([1], [2]), [{ path: '[0]', sent: 1, reported: 2 }]);
  t.same(sentFieldDifferences({ l: ['a'] }, { l: { 0: 'a', length: 1 } }), [{ path: 'l', sent: ['a'], reported: { 0: 'a', length: 1 } }], 'a list is not an object that looks like one');
  t.same(sentFieldDifferences({ a: 1 }, {}), [], 'a field the gateway does not report is no difference');
});

t.test('compare: a description names at most three differences', async (t) => {
  const three = [
    { path: 'a', sent: 1, reported: 2 },
    { path: 'b', sent: 'x', reported: null },
    { path: 'c', sent: [1], reported: [] },
  ];
  t.equal(describeDifferences(three), 'a: sent 1, gateway has 2; b: sent "x", gateway has null; c: sent [1], gateway has []');
  t.equal(describeDifferences([...three, { path: 'd', sent: 1, reported: 0 }, { path: 'e', sent: 1, reported: 0 }], 2), 'a: sent 1, gateway has 2; b: sent "x", gateway has null (and 3 more)');
  t.equal(describeDifferences([]), '');
});

t.test('transaction: waiting is Pending, invalid and failed are Failed', async (t) => {
  t.same(transactionFor(record().waiting('w').build()), { status: 'Pending', time: '2026-01-01T00:00:00.000Z', error: 'w' });
  t.equal(transactionFor(record().invalid('bad').build()).status, 'Failed');
  t.equal(transactionFor(record().failed('x').build()).status, 'Failed');
  t.same(transactionFor({ ...record().failed('x').build(), error: '' }), { status: 'Failed', time: '2026-01-01T00:00:00.000Z' }, 'an empty error is no error');
});

t.test('status: the error, the status word and the links each make a patch', async (t) => {
  const failed = record().failed('boom').build();
  const cur = { api_id: failed.id, latestTransaction: { status: 'Failed', error: 'boom', time: 'old' } };
  t.equal(statusPatch(API_DEFINITION, cur, failed), undefined);
  t.same(statusPatch(API_DEFINITION, cur, { ...failed, error: 'other' }), { api_id: failed.id, latestTransaction: { status: 'Failed', time: failed.time, error: 'other' } });
  t.same(statusPatch(API_DEFINITION, cur, { ...failed, result: 'pending' }), { api_id: failed.id, latestTransaction: { status: 'Pending', time: failed.time, error: 'boom' } });
  const synced = record().synced('d', 'o').build();
  t.strictSame(
    statusPatch(API_DEFINITION, cur, synced),
    { api_id: synced.id, latestTransaction: { status: 'Successful', time: synced.time, error: null } },
    'an error that went is removed (null: a merge patch removes it)',
  );
  const okCur = { api_id: synced.id, latestTransaction: { status: 'Successful' } };
  t.equal(statusPatch(API_DEFINITION, okCur, synced), undefined);
  t.same(statusPatch(API_DEFINITION, { ...okCur, latestTransaction: { status: 'Successful', error: 'stale' } }, synced), {
    api_id: synced.id,
    latestTransaction: { status: 'Successful', time: synced.time, error: null },
  });
});

t.test('status: links are compared canonically, and none is the same as an empty list', async (t) => {
  const synced = record().synced('d', 'o').build();
  const base = { api_id: synced.id, latestTransaction: { status: 'Successful' } };
  const links = [{ namespace: 'default', name: 'p' }];
  t.equal(statusPatch(API_DEFINITION, { ...base, linked_by_policies: [{ name: 'p', namespace: 'default' }] }, synced, { linked_by_policies: links }), undefined);
  t.equal(statusPatch(API_DEFINITION, base, synced, { linked_by_policies: [] }), undefined, 'no list and an empty one say the same');
  t.equal(statusPatch(API_DEFINITION, { ...base, linked_by_policies: [] }, synced, { linked_by_policies: undefined }), undefined);
  t.strictSame(
    statusPatch(API_DEFINITION, { ...base, linked_by_policies: links }, synced, { linked_by_policies: undefined }),
    { api_id: synced.id, latestTransaction: { status: 'Successful', time: synced.time, error: null }, linked_by_policies: null },
    'no links: removed with null, which a merge patch removes',
  );
  t.strictSame(
    statusPatch(API_DEFINITION, base, synced, { note: '' }),
    { api_id: synced.id, latestTransaction: { status: 'Successful', time: synced.time, error: null }, note: '' },
    'only lists are emptied to null',
  );
  t.same(statusPatch(API_DEFINITION, base, synced, { linked_by_policies: links }), {
    api_id: synced.id,
    latestTransaction: { status: 'Successful', time: synced.time, error: null },
    linked_by_policies: links,
  });
  t.same(
    statusPatch(API_DEFINITION, { ...base, linked_by_policies: links }, synced, { linked_by_policies: [] }),
    {
      api_id: synced.id,
      latestTransaction: { status: 'Successful', time: synced.time, error: null },
      linked_by_policies: null,
    },
    'a link that went is removed',
  );
});

t.test('status: a pruned latestTransaction is not patched again; a different id is', async (t) => {
  const failed = record().failed('boom').build();
  t.equal(statusPatch(SECURITY_POLICY, { pol_id: 'P1' }, failed, {}, 'P1'), undefined, 'pruned by the CRD: said already');
  t.same(statusPatch(SECURITY_POLICY, { pol_id: 'P0' }, failed, {}, 'P1'), { pol_id: 'P1', latestTransaction: { status: 'Failed', time: failed.time, error: 'boom' } });
  t.same(statusPatch(SECURITY_POLICY, { pol_id: 'P1', latestTransaction: null }, failed, {}, 'P1'), undefined, 'null is no transaction either');
  t.same(statusPatch(SECURITY_POLICY, { pol_id: 'P1', latestTransaction: 'Failed' }, failed, {}, 'P1'), undefined);
  t.same(statusPatch(SECURITY_POLICY, {}, { ...failed, id: '' }, {}), { latestTransaction: { status: 'Failed', time: failed.time, error: 'boom' } }, 'no id, no transaction: patched');
  t.same(statusPatch(SECURITY_POLICY, { pol_id: 'P1', latestTransaction: { status: 'Failed', error: 'boom' } }, failed, {}, 'P1'), undefined);
  t.same(
    statusPatch(SECURITY_POLICY, { pol_id: 'P1', latestTransaction: { status: 'Failed', error: 'boom' } }, failed),
    { pol_id: failed.id, latestTransaction: { status: 'Failed', time: failed.time, error: 'boom' } },
    'by default, the record id',
  );
});

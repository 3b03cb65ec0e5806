/**
 * The contract of the KubeApi and Gateway ports, as one suite run against every
 * implementation: the in-memory ports (./kube.ts, ./gateway.ts) and our real clients over HTTP
 * against the loopback fakes (test/fast/*-contract.test.ts build both). What the in-memory
 * tier relies on is asserted here, so the two cannot drift apart.
 *
 * A subject is built fresh for each test by its factory, and closed after it.
 */
import type { Test } from 'tap';
import type { Gateway, GatewayObjectKind, JsonObject } from '../../lib/gateway/types.js';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { OPERATOR_CONTEXT, SECRET } from '../../lib/kube/kinds.js';
import type { KubeApi, KubeObject, ResourceKind } from '../../lib/kube/types.js';
import { sentFieldDifferences } from '../../lib/platform/compare.js';
import { GatewayApiError, GatewayRejectedError, GatewayUnavailableError, KubeApiError, KubeConflictError, KubeUnavailableError } from '../../lib/platform/errors.js';
import { apiDefinition, FINALIZER, operatorContext, secret } from '../fixtures/builders.js';
import type { FailHow } from './faults.js';

export type { FailHow } from './faults.js';

// ───────────────────────────── KubeApi ─────────────────────────────

export type KubeFaultOp = 'get' | 'list' | 'patchStatus';

export interface KubeSubject {
  api: KubeApi;
  /** Puts an object as the cluster holds it (status, finalizers included). */
  seed(obj: KubeObject): Promise<KubeObject>;
  /** The stored object, read without the port. */
  read(kind: ResourceKind, namespace: string, name: string): Promise<KubeObject | undefined>;
  /** A user's DELETE. */
  delete(kind: ResourceKind, namespace: string, name: string): Promise<void>;
  /** The next `times` calls of `op` on ApiDefinitions in namespace "default" fail. */
  failNext(op: KubeFaultOp, how: FailHow, times?: number): void;
  /** The next `times` finalizer writes meet 409 Conflict. */
  conflictNext(times: number): void;
  close(): Promise<void>;
}

export type Factory<S> = (t: Test) => Promise<S>;

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

async function subjectFor<S extends { close(): Promise<void> }>(t: Test, factory: Factory<S>): Promise<S> {
  const s = await factory(t);
  t.teardown(() => s.close());
  return s;
}

const TIME = '2026-03-01T10:00:00Z';

export function kubeContract(t: Test, name: string, factory: Factory<KubeSubject>): void {
  const kind = API_DEFINITION;

  t.test(`${name}: get, list, generation and resourceVersion`, async (t) => {
    const s = await subjectFor(t, factory);
    t.equal(await s.api.get(kind, 'default', 'nope'), null, 'get of a missing object is null');
    const a = await s.seed(apiDefinition('a').build());
    await s.seed(apiDefinition('c').build());
    await s.seed(apiDefinition('b').inNamespace('other').build());
    const got = await s.api.get(kind, 'default', 'a');
    t.match(got, { metadata: { name: 'a', namespace: 'default', generation: 1, resourceVersion: String, uid: String } });
    t.equal(got?.metadata.resourceVersion, a.metadata.resourceVersion);
    t.same(
      (await s.api.list(kind, 'default')).map((o) => o.metadata.name),
      ['a', 'c'],
      'one namespace, sorted',
    );
    t.same(
      (await s.api.list(kind)).map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
      ['default/a', 'default/c', 'other/b'],
      'all namespaces, by namespace/name',
    );
    const changed = await s.seed(apiDefinition('a').targeting('http://example.com').build());
    t.equal(changed.metadata.generation, 2, 'a spec change bumps generation');
    t.not(changed.metadata.resourceVersion, a.metadata.resourceVersion);
    const relabelled = await s.seed(apiDefinition('a').targeting('http://example.com').withLabels({ x: 'y' }).build());
    t.equal(relabelled.metadata.generation, 2, 'a metadata change does not');
  });

  t.test(`${name}: list keeps what its keep answers true for, offered each item once`, async (t) => {
    const s = await subjectFor(t, factory);
    for (const n of ['a', 'b', 'c', 'd']) await s.seed(apiDefinition(n).build());
    await s.seed(apiDefinition('e').inNamespace('other').build());
    const offered: string[] = [];
    const kept = await s.api.list(kind, undefined, {
      keep: (o) => {
        offered.push(`${o.metadata.namespace}/${o.metadata.name}`);
        return o.metadata.name !== 'b' && o.metadata.name !== 'e';
      },
    });
    t.same(offered, ['default/a', 'default/b', 'default/c', 'default/d', 'other/e'], 'every item offered once, in list order');
    t.same(
      kept.map((o) => o.metadata.name),
      ['a', 'c', 'd'],
      'only the kept, in order',
    );
    t.match(kept[0], { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', spec: { name: 'a' } }, 'kept whole');
    t.same(await s.api.list(kind, 'default', { keep: () => false }), [], 'none kept: none');
  });

  t.test(`${name}: status is a merge-patched subresource`, async (t) => {
    const s = await subjectFor(t, factory);
    const obj = await s.seed(apiDefinition('a').build());
    const first = await s.api.patchStatus(kind, obj, { api_id: 'x', latestTransaction: { status: 'Failed', time: TIME, error: 'boom' } });
    t.match(first.status, { api_id: 'x', latestTransaction: { status: 'Failed', time: TIME, error: 'boom' } });
    t.equal(first.metadata.generation, 1, 'status does not bump generation');
    const second = await s.api.patchStatus(kind, first, { latestTransaction: { status: 'Successful', time: TIME, error: null }, linked_by_policies: [{ namespace: 'default', name: 'p' }] });
    t.same(second.status, { api_id: 'x', latestTransaction: { status: 'Successful', time: TIME }, linked_by_policies: [{ namespace: 'default', name: 'p' }] }, 'merged; null removes');
    const same = await s.api.patchStatus(kind, second, { api_id: 'x' });
    t.equal(same.metadata.resourceVersion, second.metadata.resourceVersion, 'a patch that changes nothing is no write');
    const removed = await s.api.patchStatus(kind, same, { linked_by_policies: null });
    t.same(removed.status, { api_id: 'x', latestTransaction: { status: 'Successful', time: TIME } });
    t.same((await s.read(kind, 'default', 'a'))?.status, removed.status, 'stored');
    const gone = apiDefinition('ghost').build();
    const err = await rejection(s.api.patchStatus(kind, gone, { api_id: 'y' }));
    t.ok(err instanceof KubeApiError && err.status === 404, 'status of a missing object: KubeApiError 404');
  });

  t.test(`${name}: finalizers, deletion and the last finalizer`, async (t) => {
    const s = await subjectFor(t, factory);
    const obj = await s.seed(apiDefinition('a').build());
    const withF = await s.api.addFinalizer(kind, obj, FINALIZER);
    t.same(withF.metadata.finalizers, [FINALIZER]);
    const again = await s.api.addFinalizer(kind, withF, FINALIZER);
    t.equal(again.metadata.resourceVersion, withF.metadata.resourceVersion, 'already there: nothing written');
    const stale = await s.api.addFinalizer(kind, obj, 'example.com/other');
    t.same(stale.metadata.finalizers, [FINALIZER, 'example.com/other'], 'computed from a stale object: re-read on 409, then applied');
    await s.delete(kind, 'default', 'a');
    const deleting = await s.read(kind, 'default', 'a');
    t.match(deleting?.metadata, { deletionTimestamp: String, generation: 2 }, 'DELETE with finalizers marks, and bumps generation once');
    const refused = await rejection(s.api.addFinalizer(kind, deleting as KubeObject, 'example.com/third'));
    t.ok(refused instanceof KubeApiError && refused.status === 422 && !(refused instanceof KubeConflictError), 'no new finalizer while deleting: 422');
    const one = await s.api.removeFinalizer(kind, deleting as KubeObject, 'example.com/other');
    t.same(one?.metadata.finalizers, [FINALIZER]);
    const last = await s.api.removeFinalizer(kind, one as KubeObject, FINALIZER);
    t.ok(last !== null, 'the answer is the object as sent');
    t.equal(await s.api.get(kind, 'default', 'a'), null, 'removing the last finalizer of a deleting object deletes it');
    t.equal(await s.api.removeFinalizer(kind, last as KubeObject, FINALIZER), last, 'not there: nothing to do');
    const vanished = await rejection(s.api.addFinalizer(kind, obj, FINALIZER));
    t.ok(vanished instanceof KubeApiError && vanished.status === 404, 'addFinalizer of a vanished object: 404');
    t.equal(await s.api.removeFinalizer(kind, withF, FINALIZER), null, 'removeFinalizer of a vanished object: null');
    await s.seed(apiDefinition('b').build());
    await s.delete(kind, 'default', 'b');
    t.equal(await s.api.get(kind, 'default', 'b'), null, 'DELETE without finalizers removes');
  });

  t.test(`${name}: 409 on finalizer writes is retried, then KubeConflictError`, async (t) => {
    const s = await subjectFor(t, factory);
    const obj = await s.seed(apiDefinition('a').build());
    s.conflictNext(2);
    const withF = await s.api.addFinalizer(kind, obj, FINALIZER);
    t.same(withF.metadata.finalizers, [FINALIZER], 'two conflicts, third attempt wins');
    s.conflictNext(5);
    const err = await rejection(s.api.removeFinalizer(kind, withF, FINALIZER));
    t.ok(err instanceof KubeConflictError && err.status === 409, 'five conflicts: KubeConflictError');
    t.same((await s.read(kind, 'default', 'a'))?.metadata.finalizers, [FINALIZER], 'nothing changed');
  });

  t.test(`${name}: failures throw the client's error classes`, async (t) => {
    const s = await subjectFor(t, factory);
    const obj = await s.seed(apiDefinition('a').build());
    s.failNext('list', { unavailable: true });
    t.ok((await rejection(s.api.list(kind, 'default'))) instanceof KubeUnavailableError, 'unreachable: KubeUnavailableError');
    t.equal((await s.api.list(kind, 'default')).length, 1, 'only the next call');
    s.failNext('get', { status: 500 });
    const e500 = await rejection(s.api.get(kind, 'default', 'a'));
    t.ok(e500 instanceof KubeApiError && e500.status === 500 && !(e500 instanceof KubeConflictError), '500: KubeApiError');
    s.failNext('patchStatus', { status: 409 });
    const e409 = await rejection(s.api.patchStatus(kind, obj, { api_id: 'x' }));
    t.ok(e409 instanceof KubeConflictError, 'a 409 on a status patch: KubeConflictError, not retried');
    s.failNext('patchStatus', { status: 403 });
    const e403 = await rejection(s.api.patchStatus(kind, obj, { api_id: 'x' }));
    t.ok(e403 instanceof KubeApiError && e403.status === 403);
  });

  t.test(`${name}: create, replace under resourceVersion, delete with a uid precondition, list by label`, async (t) => {
    const s = await subjectFor(t, factory);
    const labelled = (n: string, labels: Record<string, string>) => {
      const obj = apiDefinition(n).build();
      return { ...obj, metadata: { ...obj.metadata, labels } };
    };
    const created = await s.api.createObject(kind, 'default', labelled('a', { 'tyk.io/ingress': 'web', 'tyk.io/apidefinition': 'h1' }));
    t.match(created.metadata, { name: 'a', namespace: 'default', uid: /./, resourceVersion: /./, generation: 1 });
    await s.api.createObject(kind, 'default', labelled('b', { 'tyk.io/ingress': 'other' }));
    await s.api.createObject(kind, 'default', apiDefinition('c').build());
    const taken = await rejection(s.api.createObject(kind, 'default', apiDefinition('a').build()));
    t.ok(taken instanceof KubeConflictError && taken.context.reason === 'AlreadyExists', 'a taken name: 409 AlreadyExists');
    t.same(
      (await s.api.list(kind, 'default', { labelSelector: 'tyk.io/ingress' })).map((o) => o.metadata.name),
      ['a', 'b'],
      'exists',
    );
    t.same(
      (await s.api.list(kind, undefined, { labelSelector: 'tyk.io/ingress=web' })).map((o) => o.metadata.name),
      ['a'],
      'equals, all namespaces',
    );
    t.same(
      (await s.api.list(kind, 'default', { labelSelector: '!tyk.io/ingress' })).map((o) => o.metadata.name),
      ['c'],
      'does not exist',
    );

    const replaced = await s.api.replaceObject(kind, { ...created, spec: { ...created.spec, name: 'renamed' } });
    t.equal(replaced.spec?.name, 'renamed');
    t.equal(replaced.metadata.generation, 2, 'a spec change is a new generation');
    t.not(replaced.metadata.resourceVersion, created.metadata.resourceVersion);
    const stale = await rejection(s.api.replaceObject(kind, { ...created, spec: { ...created.spec, name: 'again' } }));
    t.ok(stale instanceof KubeConflictError && stale.context.reason === 'Conflict', 'a stale resourceVersion: 409 Conflict');
    t.equal((await s.read(kind, 'default', 'a'))?.spec?.name, 'renamed', 'nothing changed');

    const wrongUid = await rejection(s.api.deleteObject(kind, 'default', 'a', { uid: 'not-its-uid' }));
    t.ok(wrongUid instanceof KubeConflictError, 'a failed uid precondition: 409');
    t.ok(await s.read(kind, 'default', 'a'), 'not deleted');
    t.equal(await s.api.deleteObject(kind, 'default', 'a', { uid: created.metadata.uid as string }), 'deleted', 'no finalizers: gone');
    t.equal(await s.read(kind, 'default', 'a'), undefined);
    t.equal(await s.api.deleteObject(kind, 'default', 'a'), 'not found');
    const held = await s.seed({ ...apiDefinition('d').build(), metadata: { name: 'd', namespace: 'default', finalizers: [FINALIZER] } });
    t.equal(await s.api.deleteObject(kind, 'default', 'd', { uid: held.metadata.uid as string }), 'terminating', 'finalizers keep it');
    t.match((await s.read(kind, 'default', 'd'))?.metadata, { deletionTimestamp: /./, finalizers: [FINALIZER] });
  });

  t.test(`${name}: Events are one per thing said, counted`, async (t) => {
    const s = await subjectFor(t, factory);
    const obj = await s.seed(apiDefinition('a').build());
    const first = await s.api.recordEvent(obj, 'Warning', 'SyncFailed', 'write API x: 500 boom');
    t.match(first, { name: /^a\.[0-9a-f]{16}$/, count: 1 });
    t.same(await s.api.recordEvent(obj, 'Warning', 'SyncFailed', 'write API x: 500 boom'), { name: first.name, count: 2 });
    const other = await s.api.recordEvent(obj, 'Warning', 'SyncFailed', 'another message');
    t.not(other.name, first.name);
    t.equal(other.count, 1);
  });

  t.test(`${name}: OperatorContexts and Secrets read back as stored`, async (t) => {
    const s = await subjectFor(t, factory);
    await s.seed(operatorContext('ctx').ce('http://gw2:8080', 'secret-2').build());
    await s.seed(secret('tyk').tykConnection('pro', 'http://dash:3000', 'key').build());
    t.match(await s.api.get(OPERATOR_CONTEXT, 'default', 'ctx'), { spec: { env: { mode: 'ce', url: 'http://gw2:8080', auth: 'secret-2' } } });
    const sec = await s.api.get(SECRET, 'default', 'tyk');
    t.equal(Buffer.from(String((sec?.data as Record<string, string> | undefined)?.TYK_URL), 'base64').toString(), 'http://dash:3000');
    t.equal(await s.api.get(SECRET, 'default', 'nope'), null);
  });
}

// ───────────────────────────── Gateway ─────────────────────────────

export type GatewayFaultOp = 'get' | 'list' | 'upsert' | 'remove';

export interface GatewaySubject {
  gateway: Gateway;
  mode: 'ce' | 'pro';
  /** the org a Dashboard forces on every object; undefined for a Tyk Gateway */
  orgId?: string;
  /** Resolves once a requested reload has been applied (the HTTP fake applies it a little later). */
  afterReload(): Promise<void>;
  /** The next `times` calls of `op` for `kind` fail. */
  failNext(op: GatewayFaultOp, kind: GatewayObjectKind, how: FailHow, times?: number): void;
  /** Tyk Gateway: the next n reloads are lost. */
  dropReloads?(n: number): void;
  close(): Promise<void>;
}

export function api(name: string, listenPath = `/${name}/`): JsonObject {
  return {
    name,
    use_keyless: true,
    active: true,
    protocol: 'http',
    proxy: { listen_path: listenPath, target_url: 'http://httpbin.org', strip_listen_path: true },
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: { name: 'Default' } } },
  };
}

/** A Tyk OAS API definition (no id: the interface's id goes into x-tyk-api-gateway.info.id). */
export function oasApi(name: string, listenPath = `/${name}/`): JsonObject {
  return {
    openapi: '3.0.3',
    info: { title: name, version: '1.0.0' },
    paths: {},
    'x-tyk-api-gateway': {
      info: { name, state: { active: true } },
      upstream: { url: 'http://httpbin.org' },
      server: { listenPath: { value: listenPath, strip: true } },
    },
  };
}

export function policy(name: string, apiId = 'a1'): JsonObject {
  return { name, active: true, rate: 10, per: 60, access_rights: { [apiId]: { api_id: apiId, api_name: apiId, versions: ['Default'] } } };
}

/** Upsert, then make it visible (a reload, where the gateway needs one). */
async function write(s: GatewaySubject, kind: GatewayObjectKind, id: string, body: JsonObject): Promise<void> {
  await s.gateway.upsert(kind, id, body);
  await s.gateway.reload();
  await s.afterReload();
}

export function gatewayContract(t: Test, name: string, mode: 'ce' | 'pro', factory: Factory<GatewaySubject>): void {
  t.test(`${name}: an API written, read back as the gateway's full model, updated, removed`, async (t) => {
    const s = await subjectFor(t, factory);
    const gw = s.gateway;
    t.equal(s.mode, mode);
    t.equal(gw.reloadRequired, s.mode === 'ce', 'only the Tyk Gateway needs reloads');
    t.equal(await gw.get('api', 'a1'), null, 'unknown id: null');
    t.equal((await gw.list('api')).size, 0);
    await gw.upsert('api', 'a1', api('one'));
    if (s.mode === 'ce') t.equal(await gw.get('api', 'a1'), null, 'a Tyk Gateway write is invisible until a reload');
    else t.ok(await gw.get('api', 'a1'), 'a Dashboard write is visible at once');
    await gw.reload();
    await s.afterReload();
    const got = await gw.get('api', 'a1');
    t.same(sentFieldDifferences(api('one'), got), [], 'what we sent reads back');
    t.match(got, { api_id: 'a1', id: /^[0-9a-f]{24}$/, use_oauth2: false, auth: { auth_header_name: '' } }, "filled with the model's zero values and an object id");
    if (s.orgId !== undefined) t.equal(got?.org_id, s.orgId, 'the Dashboard owns org_id');
    await write(s, 'api', 'a1', { ...api('one'), proxy: { listen_path: '/one/', target_url: 'http://example.com', strip_listen_path: true } });
    const list = await gw.list('api');
    t.same([...list.keys()], ['a1'], 'listed by api_id; an update replaces');
    t.match(list.get('a1'), { proxy: { target_url: 'http://example.com' }, id: got?.id });
    await gw.remove('api', 'a1');
    await gw.reload();
    await s.afterReload();
    t.equal(await gw.get('api', 'a1'), null, 'removed');
    await gw.remove('api', 'a1');
    await gw.remove('api', 'never-there');
    t.pass('remove is idempotent');
  });

  t.test(`${name}: a policy written, found by its id, removed`, async (t) => {
    const s = await subjectFor(t, factory);
    const gw = s.gateway;
    t.equal(await gw.get('policy', 'p1'), null);
    await write(s, 'policy', 'p1', policy('p one'));
    const got = await gw.get('policy', 'p1');
    t.same(sentFieldDifferences(policy('p one'), got), []);
    t.match(got, { id: 'p1', quota_max: 0, partitions: { quota: false } });
    if (s.mode === 'pro') t.match(got, { _id: /^[0-9a-f]{24}$/, org_id: s.orgId }, 'the Dashboard names it by its own _id');
    else t.equal(got?._id, '', 'the Tyk Gateway has no _id of its own');
    t.same([...(await gw.list('policy')).keys()], ['p1']);
    await write(s, 'policy', 'p1', { ...policy('p one'), rate: 20 });
    t.equal((await gw.get('policy', 'p1'))?.rate, 20);
    t.equal((await gw.list('policy')).size, 1, 'updated in place');
    if (s.mode === 'pro') t.equal((await gw.get('policy', 'p1'))?._id, got?._id, 'the same _id');
    await gw.remove('policy', 'p1');
    await gw.reload();
    await s.afterReload();
    t.equal(await gw.get('policy', 'p1'), null);
    await gw.remove('policy', 'p1');
    t.pass('remove is idempotent');
  });

  t.test(`${name}: an OAS API written, read back with the gateway's additions, updated, removed`, async (t) => {
    const s = await subjectFor(t, factory);
    const gw = s.gateway;
    t.equal(await gw.get('oas', 'o1'), null, 'unknown id: null');
    t.equal((await gw.list('oas')).size, 0);
    await gw.upsert('oas', 'o1', oasApi('one'));
    if (s.mode === 'ce') t.equal(await gw.get('oas', 'o1'), null, 'a Tyk Gateway write is invisible until a reload');
    else t.ok(await gw.get('oas', 'o1'), 'a Dashboard write is visible at once');
    await gw.reload();
    await s.afterReload();
    const got = await gw.get('oas', 'o1');
    t.match(got, {
      openapi: '3.0.3',
      info: { title: 'one' },
      'x-tyk-api-gateway': { info: { id: 'o1', dbId: /^[0-9a-f]{24}$/, name: 'one', state: { active: true } }, server: { listenPath: { value: '/one/' } } },
    });
    const info = (got?.['x-tyk-api-gateway'] as { info?: JsonObject } | undefined)?.info;
    if (s.mode === 'ce') t.same(got?.servers, [{ url: 'http://127.0.0.1:8080/one' }, { url: '/one' }], 'the servers the gateway generates');
    else t.equal(info?.orgId, s.orgId, 'the Dashboard’s org');
    t.same([...(await gw.list('oas')).keys()], ['o1'], 'listed by its id');
    t.match((await gw.list('api')).get('o1'), { api_id: 'o1', is_oas: true, id: info?.dbId }, 'its Classic form is among the APIs');
    await write(s, 'oas', 'o1', oasApi('one', '/uno/'));
    const updated = await gw.get('oas', 'o1');
    t.match(updated, { 'x-tyk-api-gateway': { info: { dbId: info?.dbId }, server: { listenPath: { value: '/uno/' } } } }, 'updated in place');
    if (s.mode === 'ce') t.same(updated?.servers, [{ url: 'http://127.0.0.1:8080/uno' }, { url: '/uno' }], 'the old generated servers replaced');
    await gw.remove('oas', 'o1');
    await gw.reload();
    await s.afterReload();
    t.equal(await gw.get('oas', 'o1'), null, 'removed');
    t.equal(await gw.get('api', 'o1'), null, 'both forms');
    await gw.remove('oas', 'o1');
    await gw.remove('oas', 'never-there');
    t.pass('remove is idempotent');
  });

  t.test(`${name}: OAS bodies the gateway refuses; an id a Classic API has is never taken`, async (t) => {
    const s = await subjectFor(t, factory);
    const gw = s.gateway;
    const bare = await rejection(gw.upsert('oas', 'o1', { openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {} }));
    t.ok(bare instanceof GatewayRejectedError, 'no x-tyk-api-gateway: GatewayRejectedError');
    t.match((bare as Error).message, /payload should contain x-tyk-api-gateway/i);
    const nameless = oasApi('x');
    delete ((nameless['x-tyk-api-gateway'] as JsonObject).info as JsonObject).name;
    const invalid = await rejection(gw.upsert('oas', 'o1', nameless));
    t.ok(invalid instanceof GatewayRejectedError && invalid.status === 400, 'a schema problem');
    t.match((invalid as Error).message, /x-tyk-api-gateway\.info: name is required/);

    await write(s, 'api', 'c1', api('classic'));
    const taken = await rejection(gw.upsert('oas', 'c1', oasApi('c')));
    t.ok(taken instanceof GatewayApiError && !(taken instanceof GatewayRejectedError), 'a Classic API’s id: GatewayApiError, no rejection of the spec');
    t.match((taken as Error).message, /Tyk Classic API|not a Tyk OAS API/);
    if (s.mode === 'ce') {
      t.ok((await rejection(gw.get('oas', 'c1'))) instanceof GatewayApiError, 'the gateway says a Classic API has the id: never "absent"');
      t.ok((await rejection(gw.remove('oas', 'c1'))) instanceof GatewayApiError, 'and never deletes it as an OAS API');
    } else {
      t.equal(await gw.get('oas', 'c1'), null, 'the Dashboard’s OAS route does not see a Classic API');
      await gw.remove('oas', 'c1');
    }
    await gw.reload();
    await s.afterReload();
    t.match(await gw.get('api', 'c1'), { name: 'classic', is_oas: false }, 'the Classic API is untouched');
    t.equal((await gw.list('oas')).size, 0, 'nothing stored');
  });

  t.test(`${name}: what the gateway refuses is GatewayRejectedError`, async (t) => {
    const s = await subjectFor(t, factory);
    const bad = { ...api('bad'), enable_ip_whitelisting: true, allowed_ips: ['not-an-ip'] };
    const err = await rejection(s.gateway.upsert('api', 'bad', bad));
    t.ok(err instanceof GatewayRejectedError, 'an invalid IP in an enabled allow list');
    t.match((err as Error).message, /invalid IP\/CIDR/);
    const malformed = await rejection(s.gateway.upsert('api', 'm', { ...api('m'), use_keyless: 'yes' }));
    t.ok(malformed instanceof GatewayRejectedError, 'a field Go cannot decode');
    await s.gateway.reload();
    await s.afterReload();
    t.equal((await s.gateway.list('api')).size, 0, 'nothing stored');
  });

  t.test(`${name}: faults throw the client's error classes, once`, async (t) => {
    const s = await subjectFor(t, factory);
    s.failNext('upsert', 'api', { unavailable: true });
    t.ok((await rejection(s.gateway.upsert('api', 'a1', api('one')))) instanceof GatewayUnavailableError, 'unreachable: GatewayUnavailableError');
    await write(s, 'api', 'a1', api('one'));
    s.failNext('get', 'api', { status: 503 });
    const e503 = await rejection(s.gateway.get('api', 'a1'));
    t.ok(e503 instanceof GatewayApiError && e503.status === 503, '503: GatewayApiError with its status');
    t.ok(await s.gateway.get('api', 'a1'), 'only the next call');
    s.failNext('list', 'api', { status: 500 });
    const e500 = await rejection(s.gateway.list('api'));
    t.ok(e500 instanceof GatewayApiError && e500.status === 500);
  });

  if (mode === 'ce') {
    t.test(`${name}: listen-path collisions are renamed at load; a lost reload shows nothing`, async (t) => {
      const s = await subjectFor(t, factory);
      await s.gateway.upsert('api', 'a1', api('one', '/same/'));
      await s.gateway.upsert('api', 'a2', api('two', '/same/'));
      await s.gateway.reload();
      await s.afterReload();
      t.equal(((await s.gateway.get('api', 'a1'))?.proxy as JsonObject | undefined)?.listen_path, '/same/-a1', 'both new APIs on one path are renamed');
      t.equal(((await s.gateway.get('api', 'a2'))?.proxy as JsonObject | undefined)?.listen_path, '/same/-a2');
      s.dropReloads?.(1);
      await s.gateway.upsert('api', 'a3', api('three'));
      await s.gateway.reload();
      await s.afterReload();
      t.equal(await s.gateway.get('api', 'a3'), null, 'the reload was lost');
      await s.gateway.reload();
      await s.afterReload();
      t.ok(await s.gateway.get('api', 'a3'));
    });
  }

  if (mode === 'pro') {
    t.test(`${name}: a policy name another policy has is refused`, async (t) => {
      const s = await subjectFor(t, factory);
      await write(s, 'policy', 'p1', policy('taken'));
      t.ok((await rejection(s.gateway.upsert('policy', 'p2', policy('taken')))) instanceof GatewayRejectedError);
    });
  }
}

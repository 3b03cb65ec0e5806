import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig, Watch } from '@kubernetes/client-node';
import t from 'tap';
import { API_DEFINITION } from '../../lib/kinds/api-definition/kind.js';
import { KubeClient } from '../../lib/kube/client.js';
import { NameRange } from '../../lib/scale/list-ranges.js';
import { FakeKubeApiServer, type FakeKubeApiServerOptions, startFakeKubeApiServer, type WatchEvent } from './kube-apiserver.js';
import { type Cause, invalidStatus } from './status-bodies.js';

// Response bodies are JSON asserted field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const APIS = '/apis/tyk.tyk.io/v1alpha1';
const coll = (ns = 'default', plural = 'apidefinitions'): string => `${APIS}/namespaces/${ns}/${plural}`;
const item = (name: string, ns = 'default', plural = 'apidefinitions'): string => `${coll(ns, plural)}/${name}`;

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function start(tt: Teardown, options?: FakeKubeApiServerOptions): Promise<FakeKubeApiServer> {
  const fake = await startFakeKubeApiServer(options);
  tt.teardown(() => fake.close());
  return fake;
}

interface Reply {
  status: number;
  body: Json;
  headers: Headers;
}

interface RequestOptions {
  body?: unknown;
  contentType?: string;
  /** null: no Authorization header */
  token?: string | null;
  signal?: AbortSignal;
}

async function api(fake: FakeKubeApiServer, method: string, path: string, opts: RequestOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  const token = opts.token === undefined ? fake.token : opts.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] = opts.contentType ?? 'application/json';
  }
  const init: RequestInit = { method, headers };
  if (body !== undefined) init.body = body;
  if (opts.signal) init.signal = opts.signal;
  const res = await fetch(fake.url + path, init);
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed, headers: res.headers };
}

function apiDef(name: string, extra: Record<string, unknown> = {}, spec: Record<string, unknown> = { name, active: true }): Json {
  return { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name, ...extra }, spec };
}

async function create(fake: FakeKubeApiServer, name: string, extra: Record<string, unknown> = {}, ns = 'default'): Promise<Json> {
  const r = await api(fake, 'POST', coll(ns), { body: apiDef(name, extra) });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';

/** Reads a watch stream over fetch, one JSON event per line. */
class WatchStream {
  readonly events: Json[] = [];
  ended = false;
  private readonly controller = new AbortController();
  private wake: (() => void) | undefined;

  static async open(fake: FakeKubeApiServer, path: string): Promise<WatchStream> {
    const w = new WatchStream();
    const res = await fetch(fake.url + path, {
      headers: { authorization: `Bearer ${fake.token}` },
      signal: w.controller.signal,
    });
    if (res.status !== 200 || !res.body) throw new Error(`watch ${path}: ${res.status}`);
    void w.pump(res.body.getReader());
    return w;
  }

  private async pump(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
          this.events.push(JSON.parse(buf.slice(0, nl)));
          buf = buf.slice(nl + 1);
          this.wake?.();
        }
      }
    } catch {
      // aborted
    }
    this.ended = true;
    this.wake?.();
  }

  /** Waits until `n` events have arrived (or the stream ended, or the timeout). */
  async waitFor(n: number, timeoutMs = 2000): Promise<Json[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.events.length < n && !this.ended && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(1, deadline - Date.now()));
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.events.slice(0, n);
  }

  async waitEnd(timeoutMs = 2000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended && Date.now() < deadline) await this.waitFor(this.events.length + 1, deadline - Date.now());
    return this.ended;
  }

  close(): void {
    this.controller.abort();
  }
}

// ---------------------------------------------------------------------------------------------

t.test('auth: a missing or wrong bearer token gets 401 with a Status body', async (t) => {
  const fake = await start(t, { token: 'secret-token' });
  t.equal(fake.token, 'secret-token');
  for (const token of [null, 'wrong']) {
    const r = await api(fake, 'GET', coll(), { token });
    t.equal(r.status, 401, `token ${String(token)}`);
    t.same(r.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });
  }
  const ok = await api(fake, 'GET', coll());
  t.equal(ok.status, 200);
  t.equal(ok.body.kind, 'ApiDefinitionList');
  t.same(
    fake.calls.map((c) => c.status),
    [401, 401, 200],
    'every call is recorded with its status',
  );
  const defaultToken = await start(t);
  t.match(defaultToken.token, /^[0-9a-f]{48}$/, 'the default token is random');
  t.equal((await api(defaultToken, 'GET', coll(), { token: 'secret-token' })).status, 401);
});

t.test('create, get, 404 and AlreadyExists', async (t) => {
  const fake = await start(t, { now: () => new Date('2024-05-06T07:08:09.123Z') });
  const rvBefore = Number(fake.resourceVersion);
  const r = await api(fake, 'POST', coll(), {
    body: { metadata: { name: 'httpbin', labels: { app: 'x' } }, spec: { name: 'httpbin' }, status: { api_id: 'forged' } },
  });
  t.equal(r.status, 201);
  const obj = r.body;
  t.equal(obj.apiVersion, 'tyk.tyk.io/v1alpha1', 'apiVersion filled in');
  t.equal(obj.kind, 'ApiDefinition', 'kind filled in');
  t.equal(obj.metadata.namespace, 'default', 'namespace from the URL');
  t.match(obj.metadata.uid, /^[0-9a-f-]{36}$/);
  t.equal(obj.metadata.creationTimestamp, '2024-05-06T07:08:09Z', 'RFC 3339, second precision');
  t.equal(obj.metadata.generation, 1);
  t.equal(obj.metadata.resourceVersion, String(rvBefore + 1));
  t.notOk('status' in obj, 'create cannot set status when status is a subresource');

  const got = await api(fake, 'GET', item('httpbin'));
  t.equal(got.status, 200);
  t.same(got.body, obj, 'GET returns what create returned');

  const missing = await api(fake, 'GET', item('nope'));
  t.equal(missing.status, 404);
  t.same(missing.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'apidefinitions.tyk.tyk.io "nope" not found',
    reason: 'NotFound',
    details: { name: 'nope', group: 'tyk.tyk.io', kind: 'apidefinitions' },
    code: 404,
  });

  const again = await api(fake, 'POST', coll(), { body: apiDef('httpbin') });
  t.equal(again.status, 409);
  t.equal(again.body.reason, 'AlreadyExists');
  t.equal(again.body.message, 'apidefinitions.tyk.tyk.io "httpbin" already exists');
  t.equal(fake.resourceVersion, String(rvBefore + 1), 'a refused create writes nothing');

  const otherNs = await api(fake, 'POST', coll('other'), { body: apiDef('httpbin') });
  t.equal(otherNs.status, 201, 'the same name in another namespace is another object');
});

t.test('create rules: namespace, resourceVersion, names, generateName, pruning, unknown paths', async (t) => {
  const fake = await start(t);
  const mismatch = await api(fake, 'POST', coll('default'), { body: apiDef('a', { namespace: 'other' }) });
  t.equal(mismatch.status, 400);
  t.equal(mismatch.body.reason, 'BadRequest');
  t.equal(mismatch.body.message, 'the namespace of the provided object does not match the namespace sent on the request');

  const withRv = await api(fake, 'POST', coll(), { body: apiDef('a', { resourceVersion: '5' }) });
  t.equal(withRv.status, 500);
  t.equal(withRv.body.message, 'resourceVersion should not be set on objects to be created');

  const badName = await api(fake, 'POST', coll(), { body: apiDef('Bad_Name') });
  t.equal(badName.status, 422);
  t.equal(badName.body.reason, 'Invalid');
  t.match(badName.body.message, /^ApiDefinition\.tyk\.tyk\.io "Bad_Name" is invalid: metadata\.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain/);

  const noName = await api(fake, 'POST', coll(), { body: { metadata: {}, spec: {} } });
  t.equal(noName.status, 422);
  t.match(noName.body.message, /metadata\.name: Required value: name or generateName is required/);

  const generated = await api(fake, 'POST', coll(), { body: apiDef('', { generateName: 'gen-' }, { name: 'gen' }) });
  t.equal(generated.status, 201);
  t.match(generated.body.metadata.name, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);

  const pruned = await api(fake, 'POST', coll(), { body: { ...apiDef('p'), extra: 1, metadata: { name: 'p', bogus: true } } });
  t.equal(pruned.status, 201);
  t.notOk('extra' in pruned.body, 'unknown top-level fields are pruned');
  t.notOk('bogus' in pruned.body.metadata, 'unknown metadata fields are pruned');
  t.match(pruned.headers.get('warning') ?? '', /unknown field \\"extra\\"/);
  const strict = await api(fake, 'POST', `${coll()}?fieldValidation=Strict`, { body: { ...apiDef('q'), extra: 1 } });
  t.equal(strict.status, 400, 'fieldValidation=Strict refuses unknown fields');

  const yaml = await api(fake, 'POST', coll(), { body: 'metadata: {}', contentType: 'application/yaml' });
  t.equal(yaml.status, 415);
  t.equal(yaml.body.reason, 'UnsupportedMediaType');

  for (const path of ['/apis/tyk.tyk.io/v1alpha1/namespaces/default/widgets', '/apis/nope.io/v1/things', '/nothing']) {
    const r = await api(fake, 'GET', path);
    t.equal(r.status, 404, path);
    t.equal(r.body.kind, 'Status');
    t.equal(r.body.reason, 'NotFound');
  }
  const badMethod = await api(fake, 'POST', item('p'), { body: {} });
  t.equal(badMethod.status, 405);
});

t.test('core v1 secrets and events', async (t) => {
  const fake = await start(t);
  const created = await api(fake, 'POST', '/api/v1/namespaces/tyk/secrets', {
    body: { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tyk-auth' }, stringData: { TYK_AUTH: 'abc' } },
  });
  t.equal(created.status, 201);
  t.same(created.body.data, { TYK_AUTH: Buffer.from('abc').toString('base64') }, 'stringData is merged into data');
  t.notOk('stringData' in created.body);
  t.equal(created.body.type, 'Opaque');
  t.notOk('generation' in created.body.metadata, 'built-in kinds without generation get none');

  const unconditional = await api(fake, 'PUT', '/api/v1/namespaces/tyk/secrets/tyk-auth', {
    body: { metadata: { name: 'tyk-auth' }, data: { TYK_AUTH: Buffer.from('def').toString('base64') } },
  });
  t.equal(unconditional.status, 200, 'built-in kinds allow PUT without resourceVersion');

  const list = await api(fake, 'GET', '/api/v1/namespaces/tyk/secrets');
  t.equal(list.body.kind, 'SecretList');
  t.equal(list.body.apiVersion, 'v1');
  t.equal(list.body.items.length, 1);
  t.notOk('kind' in list.body.items[0], 'typed list items carry no kind, as from the real server');

  const missing = await api(fake, 'GET', '/api/v1/namespaces/tyk/secrets/nope');
  t.equal(missing.body.message, 'secrets "nope" not found');
  t.same(missing.body.details, { name: 'nope', kind: 'secrets' });

  const event = await api(fake, 'POST', '/api/v1/namespaces/default/events', {
    body: {
      metadata: { generateName: 'httpbin.' },
      involvedObject: { kind: 'SecurityPolicy', namespace: 'default', name: 'httpbin' },
      reason: 'Synced',
      message: 'policy created on the gateway',
      type: 'Normal',
    },
  });
  t.equal(event.status, 201);
  t.match(event.body.metadata.name, /^httpbin\./);
  const byObject = await api(fake, 'GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dhttpbin');
  t.equal(byObject.body.items.length, 1);
  t.equal(byObject.body.items[0].reason, 'Synced');
});

t.test('events as client-go aggregates them: a named create, AlreadyExists, GET, a merge patch of count under resourceVersion; the namespace must match', async (t) => {
  const fake = await start(t);
  const path = '/api/v1/namespaces/default/events';
  const body = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'httpbin.0123456789abcdef' },
    involvedObject: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', namespace: 'default', name: 'httpbin', uid: 'u-1' },
    reason: 'SyncFailed',
    message: 'write API x: 500 boom',
    type: 'Warning',
    count: 1,
    firstTimestamp: '2026-01-01T00:00:00Z',
    lastTimestamp: '2026-01-01T00:00:00Z',
  };
  const created = await api(fake, 'POST', path, { body });
  t.equal(created.status, 201);
  t.equal(created.body.metadata.name, 'httpbin.0123456789abcdef', 'the name given is kept');
  const again = await api(fake, 'POST', path, { body });
  t.equal(again.status, 409);
  t.match(again.body, { kind: 'Status', reason: 'AlreadyExists' });

  const got = await api(fake, 'GET', `${path}/httpbin.0123456789abcdef`);
  t.equal(got.status, 200);
  t.equal(got.body.count, 1);
  const rv = got.body.metadata.resourceVersion;
  const bumped = await api(fake, 'PATCH', `${path}/httpbin.0123456789abcdef`, {
    body: { count: 2, lastTimestamp: '2026-01-01T00:05:00Z', metadata: { resourceVersion: rv } },
    contentType: MERGE,
  });
  t.equal(bumped.status, 200);
  t.match(bumped.body, { count: 2, firstTimestamp: '2026-01-01T00:00:00Z', lastTimestamp: '2026-01-01T00:05:00Z', reason: 'SyncFailed' });
  const stale = await api(fake, 'PATCH', `${path}/httpbin.0123456789abcdef`, { body: { count: 3, metadata: { resourceVersion: rv } }, contentType: MERGE });
  t.equal(stale.status, 409, 'a stale resourceVersion in the patch is a Conflict');
  const gone = await api(fake, 'PATCH', `${path}/nope.0123456789abcdef`, { body: { count: 2 }, contentType: MERGE });
  t.equal(gone.status, 404);

  const elsewhere = await api(fake, 'POST', path, { body: { ...body, metadata: { name: 'other.1' }, involvedObject: { ...body.involvedObject, namespace: 'shop' } } });
  t.equal(elsewhere.status, 422);
  t.match(elsewhere.body, { reason: 'Invalid', message: /involvedObject\.namespace: Invalid value: "shop": does not match event\.namespace/ });
});

t.test('generation is bumped only when spec changes; a write that changes nothing is no write', async (t) => {
  const fake = await start(t);
  const v1 = await create(fake, 'httpbin');

  const specChange = await api(fake, 'PUT', item('httpbin'), { body: { ...v1, spec: { name: 'httpbin', active: false } } });
  t.equal(specChange.status, 200);
  t.equal(specChange.body.metadata.generation, 2, 'spec change bumps generation');
  t.ok(Number(specChange.body.metadata.resourceVersion) > Number(v1.metadata.resourceVersion));

  const v2 = specChange.body;
  const labelChange = await api(fake, 'PUT', item('httpbin'), {
    body: { ...v2, metadata: { ...v2.metadata, labels: { team: 'a' }, generation: 40 } },
  });
  t.equal(labelChange.status, 200);
  t.equal(labelChange.body.metadata.generation, 2, 'metadata change (and a forged generation) leaves generation');
  t.same(labelChange.body.metadata.labels, { team: 'a' });
  t.ok(Number(labelChange.body.metadata.resourceVersion) > Number(v2.metadata.resourceVersion), 'but bumps resourceVersion');

  const v3 = labelChange.body;
  const statusWrite = await api(fake, 'PATCH', `${item('httpbin')}/status`, { body: { status: { api_id: 'x' } }, contentType: MERGE });
  t.equal(statusWrite.body.metadata.generation, 2, 'status write leaves generation');

  const rv = statusWrite.body.metadata.resourceVersion;
  const noop = await api(fake, 'PATCH', item('httpbin'), { body: { spec: { active: false } }, contentType: MERGE });
  t.equal(noop.status, 200);
  t.equal(noop.body.metadata.resourceVersion, rv, 'a no-op patch keeps resourceVersion');
  t.equal(fake.resourceVersion, rv, 'and writes nothing');
  t.equal(v3.metadata.uid, noop.body.metadata.uid);
  t.equal(noop.body.metadata.creationTimestamp, v1.metadata.creationTimestamp, 'creationTimestamp is kept');
});

t.test('status subresource: main writes ignore status, status writes change only status', async (t) => {
  const fake = await start(t);
  const v1 = await create(fake, 'httpbin', { labels: { a: '1' } });

  const status = await api(fake, 'PUT', `${item('httpbin')}/status`, {
    body: { ...v1, spec: { name: 'changed' }, metadata: { ...v1.metadata, labels: { a: '2' } }, status: { api_id: 'abc' } },
  });
  t.equal(status.status, 200);
  t.same(status.body.status, { api_id: 'abc' });
  t.same(status.body.spec, v1.spec, 'spec in a status write is ignored');
  t.same(status.body.metadata.labels, { a: '1' }, 'metadata in a status write is ignored');
  t.equal(status.body.metadata.generation, 1);

  const main = await api(fake, 'PUT', item('httpbin'), {
    body: { ...status.body, spec: { name: 'new' }, status: { api_id: 'overwritten' } },
  });
  t.equal(main.status, 200);
  t.same(main.body.status, { api_id: 'abc' }, 'status in a main write is ignored');
  t.same(main.body.spec, { name: 'new' });

  const mergeMain = await api(fake, 'PATCH', item('httpbin'), { body: { status: { api_id: 'zzz' } }, contentType: MERGE });
  t.equal(mergeMain.body.metadata.resourceVersion, main.body.metadata.resourceVersion, 'a status-only patch to the main resource is a no-op');

  const stale = await api(fake, 'PUT', `${item('httpbin')}/status`, { body: { ...v1, status: { api_id: 'late' } } });
  t.equal(stale.status, 409, 'status writes check resourceVersion too');

  const getStatus = await api(fake, 'GET', `${item('httpbin')}/status`);
  t.same(getStatus.body.status, { api_id: 'abc' });
  const noStatus = await api(fake, 'GET', '/api/v1/namespaces/default/secrets/x/status');
  t.equal(noStatus.status, 404, 'no status subresource on secrets');
});

t.test('PUT: a stale resourceVersion is 409 Conflict, a missing one 422', async (t) => {
  const fake = await start(t);
  const v1 = await create(fake, 'httpbin');
  const v2 = (await api(fake, 'PUT', item('httpbin'), { body: { ...v1, spec: { n: 2 } } })).body;
  t.equal(v2.metadata.generation, 2);

  const stale = await api(fake, 'PUT', item('httpbin'), { body: { ...v1, spec: { n: 3 } } });
  t.equal(stale.status, 409);
  t.same(stale.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'Operation cannot be fulfilled on apidefinitions.tyk.tyk.io "httpbin": the object has been modified; please apply your changes to the latest version and try again',
    reason: 'Conflict',
    details: { name: 'httpbin', group: 'tyk.tyk.io', kind: 'apidefinitions' },
    code: 409,
  });
  t.same((await api(fake, 'GET', item('httpbin'))).body.spec, { n: 2 }, 'the stale write changed nothing');

  const { resourceVersion: _rv, ...metaWithoutRv } = v2.metadata;
  const missing = await api(fake, 'PUT', item('httpbin'), { body: { ...v2, metadata: metaWithoutRv } });
  t.equal(missing.status, 422);
  t.equal(missing.body.message, 'apidefinitions.tyk.tyk.io "httpbin" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');

  const renamed = await api(fake, 'PUT', item('httpbin'), { body: { ...v2, metadata: { ...v2.metadata, name: 'other' } } });
  t.equal(renamed.status, 400);
  t.equal(renamed.body.message, 'the name of the object (other) does not match the name on the URL (httpbin)');

  const absent = await api(fake, 'PUT', item('ghost'), { body: apiDef('ghost', { resourceVersion: '1' }) });
  t.equal(absent.status, 404, 'PUT does not create custom resources');
});

t.test('merge patch: a resourceVersion in the patch is a precondition; strategic merge is 415', async (t) => {
  const fake = await start(t);
  const v1 = await create(fake, 'httpbin', { finalizers: ['a'] });
  const v2 = (await api(fake, 'PATCH', item('httpbin'), { body: { spec: { active: false } }, contentType: MERGE })).body;
  t.equal(v2.spec.active, false);
  t.equal(v2.spec.name, 'httpbin', 'merge patch keeps unmentioned fields');

  const stale = await api(fake, 'PATCH', item('httpbin'), {
    body: { metadata: { resourceVersion: v1.metadata.resourceVersion, finalizers: [] } },
    contentType: MERGE,
  });
  t.equal(stale.status, 409);
  t.equal(stale.body.reason, 'Conflict');
  t.same((await api(fake, 'GET', item('httpbin'))).body.metadata.finalizers, ['a']);

  const fresh = await api(fake, 'PATCH', item('httpbin'), {
    body: { metadata: { resourceVersion: v2.metadata.resourceVersion, finalizers: null }, spec: { name: null } },
    contentType: MERGE,
  });
  t.equal(fresh.status, 200);
  t.notOk('finalizers' in fresh.body.metadata, 'null removes a field');
  t.same(fresh.body.spec, { active: false });

  const smp = await api(fake, 'PATCH', item('httpbin'), { body: { spec: {} }, contentType: 'application/strategic-merge-patch+json' });
  t.equal(smp.status, 415);
  t.equal(smp.body.reason, 'UnsupportedMediaType');
  t.equal(smp.body.message, 'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml');
  const plainJson = await api(fake, 'PATCH', item('httpbin'), { body: { spec: {} }, contentType: 'application/json' });
  t.equal(plainJson.status, 415);
  const missing = await api(fake, 'PATCH', item('ghost'), { body: { spec: {} }, contentType: MERGE });
  t.equal(missing.status, 404);
});

t.test('json patch: the test op guards the write; a failed test is 422 and writes nothing', async (t) => {
  const fake = await start(t);
  const v1 = await create(fake, 'httpbin', { finalizers: ['finalizers.tyk.io/apidefinition'] });
  const rv = v1.metadata.resourceVersion;

  const ok = await api(fake, 'PATCH', item('httpbin'), {
    body: [
      { op: 'test', path: '/metadata/resourceVersion', value: rv },
      { op: 'add', path: '/metadata/finalizers/-', value: 'second' },
      { op: 'replace', path: '/spec/active', value: false },
      { op: 'add', path: '/metadata/labels', value: { 'a/b': 'c' } },
    ],
    contentType: JSON_PATCH,
  });
  t.equal(ok.status, 200);
  t.same(ok.body.metadata.finalizers, ['finalizers.tyk.io/apidefinition', 'second']);
  t.equal(ok.body.spec.active, false);
  t.same(ok.body.metadata.labels, { 'a/b': 'c' });

  const after = fake.resourceVersion;
  const failed = await api(fake, 'PATCH', item('httpbin'), {
    body: [
      { op: 'test', path: '/metadata/resourceVersion', value: rv },
      { op: 'remove', path: '/metadata/finalizers/0' },
    ],
    contentType: JSON_PATCH,
  });
  t.equal(failed.status, 422);
  t.same(failed.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'the server rejected our request due to an error in our request',
    reason: 'Invalid',
    details: {},
    code: 422,
  });
  t.equal(fake.resourceVersion, after, 'nothing written');
  t.same(fake.getObject('apidefinitions', 'default', 'httpbin')?.metadata.finalizers, ['finalizers.tyk.io/apidefinition', 'second']);

  const badPath = await api(fake, 'PATCH', item('httpbin'), {
    body: [{ op: 'remove', path: '/spec/nothing' }],
    contentType: JSON_PATCH,
  });
  t.equal(badPath.status, 422, 'removing a missing path is 422 too');

  const removed = await api(fake, 'PATCH', item('httpbin'), {
    body: [
      { op: 'test', path: '/metadata/finalizers/1', value: 'second' },
      { op: 'remove', path: '/metadata/finalizers/1' },
      { op: 'move', from: '/spec/name', path: '/spec/title' },
    ],
    contentType: JSON_PATCH,
  });
  t.equal(removed.status, 200);
  t.same(removed.body.metadata.finalizers, ['finalizers.tyk.io/apidefinition']);
  t.same(removed.body.spec, { active: false, title: 'httpbin' });

  const notArray = await api(fake, 'PATCH', item('httpbin'), { body: { op: 'add' }, contentType: JSON_PATCH });
  t.equal(notArray.status, 400);
});

t.test('finalizers: DELETE marks, no new finalizers while deleting, removing the last one deletes', async (t) => {
  const fake = await start(t, { now: () => new Date('2024-01-02T03:04:05Z') });
  const fin = 'finalizers.tyk.io/apidefinition';
  const v1 = await create(fake, 'httpbin', { finalizers: [fin] });

  const del = await api(fake, 'DELETE', item('httpbin'));
  t.equal(del.status, 200);
  t.equal(del.body.kind, 'ApiDefinition', 'answers with the object');
  t.equal(del.body.metadata.deletionTimestamp, '2024-01-02T03:04:05Z');
  t.equal(del.body.metadata.deletionGracePeriodSeconds, 0);
  t.equal(del.body.metadata.generation, 2, 'the real store bumps generation when it marks deletion');
  t.ok(Number(del.body.metadata.resourceVersion) > Number(v1.metadata.resourceVersion));
  t.same((await api(fake, 'GET', item('httpbin'))).body.metadata.deletionTimestamp, '2024-01-02T03:04:05Z', 'still there');

  const againRv = fake.resourceVersion;
  const again = await api(fake, 'DELETE', item('httpbin'));
  t.equal(again.status, 200);
  t.equal(fake.resourceVersion, againRv, 'deleting again changes nothing');

  const marked = del.body;
  const addFin = await api(fake, 'PUT', item('httpbin'), {
    body: { ...marked, metadata: { ...marked.metadata, finalizers: [fin, 'new.example.com/x'] } },
  });
  t.equal(addFin.status, 422);
  t.equal(addFin.body.reason, 'Invalid');
  t.equal(
    addFin.body.message,
    'ApiDefinition.tyk.tyk.io "httpbin" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"new.example.com/x"}',
  );
  t.equal(addFin.body.details.causes[0].field, 'metadata.finalizers');

  const clear = await api(fake, 'PUT', item('httpbin'), {
    body: { ...marked, metadata: { ...marked.metadata, deletionTimestamp: undefined, labels: { x: 'y' } } },
  });
  t.equal(clear.status, 200);
  t.equal(clear.body.metadata.deletionTimestamp, '2024-01-02T03:04:05Z', 'deletionTimestamp cannot be cleared');

  const events: WatchEvent[] = [];
  fake.onEvent((e) => events.push(e));
  const rvBeforeRemoval = Number(fake.resourceVersion);
  const remove = await api(fake, 'PATCH', item('httpbin'), {
    body: [
      { op: 'test', path: '/metadata/finalizers', value: [fin] },
      { op: 'remove', path: '/metadata/finalizers' },
    ],
    contentType: JSON_PATCH,
  });
  t.equal(remove.status, 200, 'the update that removes the last finalizer succeeds');
  t.notOk(remove.body.metadata.finalizers, 'and answers with the object as sent');
  t.equal((await api(fake, 'GET', item('httpbin'))).status, 404, 'the object is gone at once');
  t.same(
    events.map((e) => e.type),
    ['DELETED'],
    'one DELETED event, no MODIFIED',
  );
  t.equal(events[0]?.object.metadata.resourceVersion, String(rvBeforeRemoval + 1));
});

t.test('DELETE without finalizers removes at once; preconditions', async (t) => {
  const fake = await start(t);
  const v1 = await create(fake, 'httpbin');
  const pre = await api(fake, 'DELETE', item('httpbin'), {
    body: { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: 'not-the-uid' } },
  });
  t.equal(pre.status, 409);
  t.match(pre.body.message, /Precondition failed: UID in precondition: not-the-uid, UID in object meta: /);
  const del = await api(fake, 'DELETE', item('httpbin'), { body: { preconditions: { uid: v1.metadata.uid } } });
  t.equal(del.status, 200);
  t.same(del.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Success',
    details: { name: 'httpbin', group: 'tyk.tyk.io', kind: 'apidefinitions', uid: v1.metadata.uid },
  });
  t.equal((await api(fake, 'GET', item('httpbin'))).status, 404);
  t.equal((await api(fake, 'DELETE', item('httpbin'))).status, 404);
});

t.test('list: pagination across 5 objects with limit 2', async (t) => {
  const fake = await start(t);
  // created out of order and across namespaces: lists are sorted by namespace/name
  for (const [ns, name] of [
    ['default', 'c'],
    ['default', 'a'],
    ['other', 'a'],
    ['default', 'e'],
    ['default', 'b'],
  ] as const) {
    await create(fake, name, {}, ns);
  }
  const pages: Json[] = [];
  let next: string | undefined;
  do {
    const q = next ? `?limit=2&continue=${encodeURIComponent(next)}` : '?limit=2';
    const r = await api(fake, 'GET', `${APIS}/apidefinitions${q}`);
    t.equal(r.status, 200);
    pages.push(r.body);
    next = r.body.metadata.continue;
  } while (next && pages.length < 10);
  t.equal(pages.length, 3);
  t.same(
    pages.map((p) => p.items.map((i: Json) => `${i.metadata.namespace}/${i.metadata.name}`)),
    [['default/a', 'default/b'], ['default/c', 'default/e'], ['other/a']],
  );
  t.same(
    pages.map((p) => p.metadata.remainingItemCount),
    [3, 1, undefined],
  );
  t.equal(pages[2].metadata.continue, undefined, 'the last page has no continue');
  t.equal(pages[0].kind, 'ApiDefinitionList');
  t.equal(pages[0].apiVersion, 'tyk.tyk.io/v1alpha1');
  t.equal(pages[0].items[0].kind, 'ApiDefinition', 'custom resource list items carry kind');
  t.equal(pages[1].metadata.resourceVersion, pages[0].metadata.resourceVersion, 'pages report the list resourceVersion');

  const namespaced = await api(fake, 'GET', `${coll('default')}?limit=3`);
  t.same(
    namespaced.body.items.map((i: Json) => i.metadata.name),
    ['a', 'b', 'c'],
  );
  t.equal(namespaced.body.metadata.remainingItemCount, 1);
  const token = JSON.parse(Buffer.from(namespaced.body.metadata.continue, 'base64').toString());
  t.same(token, { v: 'meta.k8s.io/v1', rv: Number(namespaced.body.metadata.resourceVersion), start: 'default/c\u0000' });

  const garbage = await api(fake, 'GET', `${coll()}?limit=2&continue=not-a-token`);
  t.equal(garbage.status, 400);
});

t.test('list: an object created or deleted between lists takes or leaves its place in the order; an update keeps it', async (t) => {
  const fake = await start(t);
  for (const name of ['a', 'c', 'e']) await create(fake, name);
  const names = async (): Promise<string[]> => (await api(fake, 'GET', `${coll('default')}`)).body.items.map((i: Json) => i.metadata.name);
  t.same(await names(), ['a', 'c', 'e']);
  await create(fake, 'b');
  await create(fake, 'd');
  t.same(await names(), ['a', 'b', 'c', 'd', 'e'], 'created after a list: in their places');
  t.equal((await api(fake, 'DELETE', `${coll('default')}/c`)).status, 200);
  t.same(await names(), ['a', 'b', 'd', 'e'], 'deleted after a list: gone from the next');
  const patched = await api(fake, 'PATCH', `${coll('default')}/d`, { body: { spec: { name: 'd', active: false } }, contentType: 'application/merge-patch+json' });
  t.equal(patched.status, 200);
  const items = (await api(fake, 'GET', `${coll('default')}`)).body.items;
  t.same(
    items.map((i: Json) => i.metadata.name),
    ['a', 'b', 'd', 'e'],
    'an update keeps its place',
  );
  t.equal(items[2].spec.active, false, 'and the list shows it as updated');
  const page = await api(fake, 'GET', `${coll('default')}?limit=2`);
  await create(fake, 'bb');
  const rest = await api(fake, 'GET', `${coll('default')}?limit=10&continue=${encodeURIComponent(page.body.metadata.continue)}`);
  t.same(
    rest.body.items.map((i: Json) => i.metadata.name),
    ['bb', 'd', 'e'],
    'a page after a create starts where the last one ended (no consistent snapshot, as the header says)',
  );
});

t.test('list: metadata only when asked for a PartialObjectMetadataList (KubeClient: ListOptions.metadataOnly, paged)', async (t) => {
  const fake = await start(t);
  for (const [ns, name] of [
    ['default', 'a'],
    ['default', 'b'],
    ['other', 'c'],
  ] as const) {
    await create(fake, name, {}, ns);
  }
  const res = await fetch(`${fake.url}${APIS}/apidefinitions?limit=2`, {
    headers: { authorization: `Bearer ${fake.token}`, accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json' },
  });
  const page = (await res.json()) as Json;
  t.equal(page.kind, 'PartialObjectMetadataList');
  t.equal(page.apiVersion, 'meta.k8s.io/v1');
  t.ok(page.metadata.continue, 'paged as any list');
  t.same(
    page.items.map((i: Json) => Object.keys(i).sort()),
    [
      ['apiVersion', 'kind', 'metadata'],
      ['apiVersion', 'kind', 'metadata'],
    ],
    'no spec, no status',
  );
  t.match(page.items[0], { kind: 'PartialObjectMetadata', metadata: { name: 'a', namespace: 'default', uid: String, resourceVersion: String } });

  const kc = new KubeConfig();
  kc.loadFromString(fake.kubeconfigYaml());
  const client = new KubeClient(kc, { pageSize: 2 });
  t.teardown(() => client.close());
  const meta = await client.list(API_DEFINITION, undefined, { metadataOnly: true });
  t.same(
    meta.map((o) => `${o.metadata.namespace}/${o.metadata.name}:${o.spec === undefined}`),
    ['default/a:true', 'default/b:true', 'other/c:true'],
    'every page, metadata only',
  );
  const offered: string[] = [];
  const kept = await client.list(API_DEFINITION, undefined, {
    keep: (o) => {
      offered.push(o.metadata.name);
      return o.metadata.name !== 'b';
    },
  });
  t.same(offered, ['a', 'b', 'c'], 'keep is offered the items of every page');
  t.same(
    kept.map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
    ['default/a', 'other/c'],
    'what keep drops is not returned, across pages',
  );
  const full = await client.list(API_DEFINITION, 'default');
  t.same(
    full.map((o) => [o.kind, o.spec?.name]),
    [
      ['ApiDefinition', 'a'],
      ['ApiDefinition', 'b'],
    ],
    'without the option: the objects',
  );

  // an empty one, as kube-apiserver 1.20 answers it: "items": null (the full list: [])
  const emptyPage = (await (
    await fetch(`${fake.url}${APIS}/namespaces/empty/apidefinitions?limit=2`, {
      headers: { authorization: `Bearer ${fake.token}`, accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json' },
    })
  ).json()) as Json;
  t.equal(emptyPage.items, null, 'an empty metadata-only list: items null');
  t.same((await api(fake, 'GET', `${APIS}/namespaces/empty/apidefinitions`)).body.items, [], 'an empty full list: items []');
  t.same(await client.list(API_DEFINITION, 'empty', { metadataOnly: true }), [], 'KubeClient: null items are no items');
});

t.test('list: an expired continue token is 410 Expired', async (t) => {
  const fake = await start(t);
  for (const name of ['a', 'b', 'c']) await create(fake, name);
  const first = await api(fake, 'GET', `${coll()}?limit=1`);
  const token = first.body.metadata.continue as string;
  t.equal((await api(fake, 'GET', `${coll()}?limit=1&continue=${encodeURIComponent(token)}`)).status, 200, 'valid before');
  fake.expireContinueTokens();
  const gone = await api(fake, 'GET', `${coll()}?limit=1&continue=${encodeURIComponent(token)}`);
  t.equal(gone.status, 410);
  t.equal(gone.body.reason, 'Expired');
  t.equal(gone.body.code, 410);
  t.match(gone.body.message, /^The provided continue parameter is too old/);
  const fresh = await api(fake, 'GET', `${coll()}?limit=1`);
  const next = await api(fake, 'GET', `${coll()}?limit=1&continue=${encodeURIComponent(fresh.body.metadata.continue)}`);
  t.equal(next.status, 200, 'tokens minted after the expiry still work');
  t.equal(next.body.items[0].metadata.name, 'b');
});

t.test(
  'KubeClient: a range of names stops after the page that reaches its end, begins at the page the range before left, reads from the first when that token is too old or a name comes out of order',
  async (t) => {
    const fake = await start(t);
    const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
    for (const name of names) await create(fake, name);
    await create(fake, 'a', {}, 'other');
    const kc = new KubeConfig();
    kc.loadFromString(fake.kubeconfigYaml());
    const client = new KubeClient(kc, { pageSize: 2 });
    t.teardown(() => client.close());
    const pages = () => fake.count('GET', coll());
    const listed = (objs: { metadata: { name: string } }[]) => objs.map((o) => o.metadata.name);

    const left: string[] = [];
    fake.resetCalls();
    const first = await client.list(API_DEFINITION, 'default', { keep: (o) => o.metadata.name < 'e', range: new NameRange('e', undefined, (token) => left.push(token)) });
    t.same(listed(first), ['a', 'b', 'c', 'd']);
    t.equal(pages(), 3, 'pages [a b] [c d] [e f]: stopped after the one that reached e');
    t.equal(left.length, 1, 'and left the token of that page');

    fake.resetCalls();
    const second = await client.list(API_DEFINITION, 'default', { keep: (o) => o.metadata.name >= 'e', range: new NameRange(undefined, left[0]) });
    t.same(listed(second), ['e', 'f', 'g', 'h']);
    t.equal(pages(), 2, 'the next range began there: [e f] [g h]');
    t.equal(fake.calls.at(0)?.query.continue, left[0]);

    fake.resetCalls();
    const told: string[] = [];
    const short = await client.list(API_DEFINITION, 'default', { keep: (o) => o.metadata.name < 'b', range: new NameRange('b', undefined, (token) => told.push(token)) });
    t.same(listed(short), ['a']);
    t.equal(pages(), 1, 'its end on the first page: one page');
    t.same(told, [], 'and no token: the next range begins at the first page too');

    fake.resetCalls();
    fake.expireContinueTokens();
    const late = await client.list(API_DEFINITION, 'default', { keep: (o) => o.metadata.name >= 'e', range: new NameRange(undefined, left[0]) });
    t.same(listed(late), ['e', 'f', 'g', 'h'], 'a token too old: the same objects');
    t.equal(pages(), 5, 'the 410, then every page from the first');
    t.equal(fake.calls.at(1)?.query.continue, undefined);

    // a server that answers a page out of name order: the listing reads on to the end
    const fresh = await api(fake, 'GET', `${coll()}?limit=2`);
    const body = {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'ApiDefinitionList',
      metadata: { resourceVersion: fake.resourceVersion, continue: fresh.body.metadata.continue },
      items: [...fresh.body.items].reverse(),
    };
    fake.inject({ method: 'GET', path: coll(), status: 200, body, times: 1 });
    fake.resetCalls();
    const never: string[] = [];
    const unordered = await client.list(API_DEFINITION, 'default', { keep: (o) => o.metadata.name < 'b', range: new NameRange('b', undefined, (token) => never.push(token)) });
    t.same(listed(unordered), ['a']);
    t.equal(pages(), 4, 'b before a: nothing is taken for the name order, every page read');
    t.same(never, [], 'and nothing handed on');

    fake.resetCalls();
    t.same(listed(await client.list(API_DEFINITION, undefined, { range: new NameRange('b') })), ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'a'], 'all namespaces: the range is not applied');
  },
);

t.test('list: label and field selectors', async (t) => {
  const fake = await start(t);
  await create(fake, 'a', { labels: { tier: 'gold', team: 'x' } });
  await create(fake, 'b', { labels: { tier: 'silver' } });
  await create(fake, 'c');
  await create(fake, 'a', { labels: { tier: 'gold' } }, 'other');
  const names = async (q: string): Promise<string[]> => {
    const r = await api(fake, 'GET', `${APIS}/apidefinitions?${q}`);
    if (r.status !== 200) throw new Error(`${q}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.items.map((i: Json) => `${i.metadata.namespace}/${i.metadata.name}`);
  };
  t.same(await names('labelSelector=tier%3Dgold'), ['default/a', 'other/a']);
  t.same(await names('labelSelector=tier%3D%3Dgold,team%3Dx'), ['default/a']);
  t.same(await names('labelSelector=tier!%3Dgold'), ['default/b', 'default/c'], '!= matches objects without the label');
  t.same(await names('labelSelector=tier%20in%20(gold,silver)'), ['default/a', 'default/b', 'other/a']);
  t.same(await names('labelSelector=!tier'), ['default/c']);
  t.same(await names('fieldSelector=metadata.name%3Da'), ['default/a', 'other/a']);
  t.same(await names('fieldSelector=metadata.namespace%3Dother'), ['other/a']);
  t.same(await names('fieldSelector=metadata.namespace!%3Dother,metadata.name!%3Da'), ['default/b', 'default/c']);
  const limited = await api(fake, 'GET', `${APIS}/apidefinitions?labelSelector=tier&limit=1`);
  t.equal(limited.body.metadata.remainingItemCount, undefined, 'no remainingItemCount with a selector');
  t.ok(limited.body.metadata.continue);
  const unsupported = await api(fake, 'GET', `${APIS}/apidefinitions?fieldSelector=spec.name%3Da`);
  t.equal(unsupported.status, 400);
  t.equal(unsupported.body.message, 'field label not supported: spec.name');
  const bad = await api(fake, 'GET', `${APIS}/apidefinitions?labelSelector=%3D%3D%3D`);
  t.equal(bad.status, 400);
});

t.test('watch: ADDED, MODIFIED, DELETED after the list resourceVersion', async (t) => {
  const fake = await start(t);
  await create(fake, 'before');
  const list = await api(fake, 'GET', coll());
  const w = await WatchStream.open(fake, `${coll()}?watch=true&resourceVersion=${list.body.metadata.resourceVersion}`);
  t.teardown(() => w.close());
  t.equal(fake.watchCount, 1);

  const created = await create(fake, 'httpbin', { finalizers: ['f'] });
  await api(fake, 'PATCH', item('httpbin'), { body: { spec: { active: false } }, contentType: MERGE });
  await api(fake, 'PATCH', `${item('httpbin')}/status`, { body: { status: { api_id: 'x' } }, contentType: MERGE });
  await api(fake, 'DELETE', item('httpbin'));
  await api(fake, 'PATCH', item('httpbin'), { body: { metadata: { finalizers: null } }, contentType: MERGE });
  await create(fake, 'elsewhere', {}, 'other');

  const events = await w.waitFor(5);
  t.same(
    events.map((e: Json) => e.type),
    ['ADDED', 'MODIFIED', 'MODIFIED', 'MODIFIED', 'DELETED'],
  );
  t.equal(events[0].object.metadata.uid, created.metadata.uid);
  t.equal(events[1].object.spec.active, false);
  t.same(events[2].object.status, { api_id: 'x' });
  t.ok(events[3].object.metadata.deletionTimestamp);
  t.same(events[4].object.metadata.finalizers, ['f'], 'DELETED carries the last stored state');
  const rvs = events.map((e: Json) => Number(e.object.metadata.resourceVersion));
  t.same(
    rvs,
    [...rvs].sort((a, b) => a - b),
    'resourceVersions increase',
  );
  t.equal(w.events.length, 5, 'nothing from another namespace');

  const replay = await WatchStream.open(fake, `${coll()}?watch=1&resourceVersion=${events[1].object.metadata.resourceVersion}`);
  t.teardown(() => replay.close());
  const replayed = await replay.waitFor(3);
  t.same(
    replayed.map((e: Json) => e.type),
    ['MODIFIED', 'MODIFIED', 'DELETED'],
    'a watch from a recent resourceVersion replays what followed',
  );

  const fromNow = await WatchStream.open(fake, `${APIS}/apidefinitions?watch=true`);
  t.teardown(() => fromNow.close());
  const initial = await fromNow.waitFor(2);
  t.same(
    initial.map((e: Json) => `${e.type} ${e.object.metadata.namespace}/${e.object.metadata.name}`),
    ['ADDED default/before', 'ADDED other/elsewhere'],
    'without a resourceVersion a watch starts with the current state',
  );
});

t.test('watch: too old resourceVersion, timeoutSeconds, selectors, bookmarks, close', async (t) => {
  const fake = await start(t, { watchHistorySize: 2 });
  await create(fake, 'a');
  await create(fake, 'b');
  await create(fake, 'c');
  await create(fake, 'd'); // the history now holds the last two writes only
  const old = await WatchStream.open(fake, `${coll()}?watch=true&resourceVersion=1`);
  t.ok(await old.waitEnd(), 'the server ends the stream');
  t.equal(old.events.length, 1);
  t.equal(old.events[0].type, 'ERROR');
  t.match(old.events[0].object, { kind: 'Status', status: 'Failure', reason: 'Expired', code: 410 });
  t.match(old.events[0].object.message, /^too old resource version: 1/);

  const recent = await WatchStream.open(fake, `${coll()}?watch=true&resourceVersion=${Number(fake.resourceVersion) - 1}`);
  t.teardown(() => recent.close());
  t.same(
    (await recent.waitFor(1)).map((e: Json) => e.object.metadata.name),
    ['d'],
    'within the history: replayed',
  );
  const edge = await WatchStream.open(fake, `${coll()}?watch=true&resourceVersion=2`);
  t.teardown(() => edge.close());
  t.same(
    (await edge.waitFor(2)).map((e: Json) => `${e.type} ${e.object.metadata.name}`),
    ['ADDED c', 'ADDED d'],
    'from the oldest resourceVersion the history still covers',
  );

  fake.compactWatchHistory();
  const compacted = await WatchStream.open(fake, `${coll()}?watch=true&resourceVersion=${Number(fake.resourceVersion) - 1}`);
  t.ok(await compacted.waitEnd());
  t.equal(compacted.events[0]?.object.code, 410, 'after compaction: 410');

  const tooNew = await api(fake, 'GET', `${coll()}?watch=true&resourceVersion=999999`);
  t.equal(tooNew.status, 504);

  const started = Date.now();
  const timed = await WatchStream.open(fake, `${coll()}?watch=true&resourceVersion=${fake.resourceVersion}&timeoutSeconds=0.2`);
  t.ok(await timed.waitEnd(3000), 'timeoutSeconds ends the stream');
  t.ok(Date.now() - started >= 150);

  const selected = await WatchStream.open(fake, `${coll()}?watch=true&resourceVersion=${fake.resourceVersion}&labelSelector=sync%3Dyes&allowWatchBookmarks=true`);
  t.teardown(() => selected.close());
  await api(fake, 'PATCH', item('a'), { body: { metadata: { labels: { sync: 'yes' } } }, contentType: MERGE });
  await api(fake, 'PATCH', item('a'), { body: { spec: { x: 1 } }, contentType: MERGE });
  await api(fake, 'PATCH', item('a'), { body: { metadata: { labels: { sync: 'no' } } }, contentType: MERGE });
  await api(fake, 'PATCH', item('b'), { body: { spec: { x: 1 } }, contentType: MERGE });
  fake.sendBookmarks();
  const sel = await selected.waitFor(4);
  t.same(
    sel.map((e: Json) => e.type),
    ['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK'],
    'entering the selector is ADDED, leaving it DELETED',
  );
  t.same(sel[2].object.metadata.labels, { sync: 'yes' }, 'DELETED for leaving carries the previous content');
  t.equal(sel[3].object.metadata.resourceVersion, fake.resourceVersion);

  const open = await WatchStream.open(fake, `${coll()}?watch=true&resourceVersion=${fake.resourceVersion}`);
  t.ok(fake.watchCount >= 2);
  fake.closeWatches();
  t.ok(await open.waitEnd(), 'closeWatches ends streams');
  t.ok(await selected.waitEnd());
  t.equal(fake.watchCount, 0);
});

t.test('onEvent forwards every write as a WatchEvent', async (t) => {
  const fake = await start(t);
  const seen: Array<[string, string, string]> = [];
  const stop = fake.onEvent((e, resource) => seen.push([e.type, resource.kind, e.object.metadata.name]));
  await create(fake, 'a');
  await api(fake, 'PATCH', item('a'), { body: { spec: { x: 1 } }, contentType: MERGE });
  fake.put({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'tyk' }, data: {} });
  await api(fake, 'DELETE', item('a'));
  stop();
  await create(fake, 'b');
  t.same(seen, [
    ['ADDED', 'ApiDefinition', 'a'],
    ['MODIFIED', 'ApiDefinition', 'a'],
    ['ADDED', 'Secret', 's'],
    ['DELETED', 'ApiDefinition', 'a'],
  ]);
});

t.test('@kubernetes/client-node accepts its answers', async (t) => {
  const fake = await start(t);
  const kc = new KubeConfig();
  kc.loadFromString(fake.kubeconfigYaml());
  t.equal(kc.getCurrentCluster()?.server, fake.url);
  t.equal(kc.getContextObject(kc.getCurrentContext())?.namespace, 'default');
  t.equal(kc.getCurrentCluster()?.skipTLSVerify, true, 'needed by client-node for http://');
  const custom = kc.makeApiClient(CustomObjectsApi);
  const group = 'tyk.tyk.io';
  const version = 'v1alpha1';
  const plural = 'apidefinitions';

  const created = await custom.createNamespacedCustomObject({ group, version, namespace: 'default', plural, body: apiDef('httpbin') });
  t.equal(created.metadata.name, 'httpbin');
  await create(fake, 'second');

  const list = await custom.listNamespacedCustomObject({ group, version, namespace: 'default', plural });
  t.equal(list.kind, 'ApiDefinitionList');
  t.same(
    list.items.map((i: Json) => i.metadata.name),
    ['httpbin', 'second'],
  );

  const patched = await custom.patchNamespacedCustomObjectStatus({
    group,
    version,
    namespace: 'default',
    plural,
    name: 'httpbin',
    body: [{ op: 'add', path: '/status', value: { api_id: 'abc' } }],
  });
  t.same(patched.status, { api_id: 'abc' }, 'the client sends JSON patch by default');
  t.equal(fake.calls.at(-1)?.contentType, 'application/json-patch+json');

  const err = await custom.getNamespacedCustomObject({ group, version, namespace: 'default', plural, name: 'nope' }).catch((e: unknown) => e);
  t.ok(err instanceof ApiException, 'a 404 surfaces as ApiException');
  t.equal((err as ApiException<unknown>).code, 404);
  t.match(String((err as ApiException<unknown>).body), /apidefinitions\.tyk\.tyk\.io \\"nope\\" not found/);

  await custom.deleteNamespacedCustomObject({ group, version, namespace: 'default', plural, name: 'second' });
  t.notOk(fake.getObject('apidefinitions', 'default', 'second'), 'deleted through the client');

  const core = kc.makeApiClient(CoreV1Api);
  fake.put({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'tyk', namespace: 'default' }, data: { k: 'dg==' } });
  const secret = await core.readNamespacedSecret({ name: 'tyk', namespace: 'default' });
  t.same(secret.data, { k: 'dg==' });
  const secrets = await core.listNamespacedSecret({ namespace: 'default' });
  t.equal(secrets.items.length, 1);

  // the client's Watch over the same server
  const received: string[] = [];
  let finished: (err: unknown) => void = () => undefined;
  const done = new Promise<unknown>((resolve) => {
    finished = resolve;
  });
  const controller = await new Watch(kc).watch(
    `${APIS}/namespaces/default/apidefinitions`,
    { resourceVersion: fake.resourceVersion },
    (type: string, obj: Json) => received.push(`${type} ${obj.metadata.name}`),
    (e: unknown) => finished(e),
  );
  await create(fake, 'watched');
  const deadline = Date.now() + 2000;
  while (received.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  t.same(received, ['ADDED watched']);
  fake.closeWatches();
  t.equal(await done, null, 'a server-side end of the watch reaches done(null)');
  controller.abort();
});

t.test('faults: a status answer, once, then normal service', async (t) => {
  const fake = await start(t);
  await create(fake, 'httpbin');
  const handle = fake.inject({ method: 'GET', path: item('httpbin'), status: 503 });
  const failed = await api(fake, 'GET', item('httpbin'));
  t.equal(failed.status, 503);
  t.match(failed.body, { kind: 'Status', reason: 'ServiceUnavailable', code: 503 });
  t.equal(handle.fired, 1);
  t.equal((await api(fake, 'GET', item('httpbin'))).status, 200, 'times defaults to 1');
  t.equal((await api(fake, 'GET', coll())).status, 200);

  fake.inject({ path: /apidefinitions$/, status: 500, body: 'boom', times: 2 });
  const list1 = await api(fake, 'GET', coll());
  t.equal(list1.status, 500);
  t.equal(list1.body, 'boom', 'a string body is sent as text');
  t.equal((await api(fake, 'GET', coll())).status, 500);
  t.equal((await api(fake, 'GET', coll())).status, 200);

  const forever = fake.inject({ method: 'patch', status: 409, times: Infinity, headers: { 'retry-after': '1' } });
  const p1 = await api(fake, 'PATCH', item('httpbin'), { body: {}, contentType: MERGE });
  t.equal(p1.status, 409);
  t.equal(p1.headers.get('retry-after'), '1');
  t.equal((await api(fake, 'PATCH', item('httpbin'), { body: {}, contentType: MERGE })).status, 409);
  forever.cancel();
  t.equal((await api(fake, 'PATCH', item('httpbin'), { body: {}, contentType: MERGE })).status, 200, 'cancelled');

  fake.inject({ status: 500, times: Infinity });
  fake.clearFaults();
  t.equal((await api(fake, 'GET', coll())).status, 200, 'clearFaults');
  t.equal(fake.getObject('apidefinitions', 'default', 'httpbin')?.metadata.generation, 1, 'faulted writes wrote nothing');
});

t.test('faults: delay, then normal service', async (t) => {
  const fake = await start(t);
  fake.inject({ path: coll(), delayMs: 150 });
  const started = Date.now();
  const slow = await api(fake, 'GET', coll());
  t.equal(slow.status, 200);
  t.ok(Date.now() - started >= 140, 'delayed');
  const fast = Date.now();
  await api(fake, 'GET', coll());
  t.ok(Date.now() - fast < 140, 'only once');

  fake.inject({ delayMs: 50, status: 504 });
  t.equal((await api(fake, 'GET', coll())).status, 504, 'delay then status');
});

t.test('faults: drop destroys the connection without an answer', async (t) => {
  const fake = await start(t);
  fake.inject({ method: 'POST', drop: true });
  const err = await api(fake, 'POST', coll(), { body: apiDef('x') }).catch((e: unknown) => e);
  t.ok(err instanceof TypeError, 'fetch fails');
  t.equal(fake.calls.at(-1)?.status, 0, 'recorded as unanswered');
  t.same(fake.calls.at(-1)?.body, apiDef('x'), 'the request body is recorded');
  t.notOk(fake.getObject('apidefinitions', 'default', 'x'), 'nothing created');
  t.equal((await api(fake, 'POST', coll(), { body: apiDef('x') })).status, 201);
});

t.test('faults: hang never answers; the client times out; close() ends it', async (t) => {
  const fake = await startFakeKubeApiServer();
  fake.inject({ path: coll(), hang: true, times: 2 });
  const err = await api(fake, 'GET', coll(), { signal: AbortSignal.timeout(150) }).catch((e: unknown) => e);
  t.ok(err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'), 'client-side timeout');
  const pending = api(fake, 'GET', coll()).then(
    () => 'answered',
    () => 'failed',
  );
  await new Promise((r) => setTimeout(r, 50));
  const closedAt = Date.now();
  await fake.close();
  t.equal(await pending, 'failed', 'close() ends the hung request');
  t.ok(Date.now() - closedAt < 1000, 'promptly');
});

t.test('faults: afterCalls lets a list fail on its second page', async (t) => {
  const fake = await start(t);
  for (const name of ['a', 'b', 'c', 'd']) await create(fake, name);
  fake.inject({ method: 'GET', path: coll(), afterCalls: 1, status: 500 });
  const page1 = await api(fake, 'GET', `${coll()}?limit=2`);
  t.equal(page1.status, 200);
  const page2 = await api(fake, 'GET', `${coll()}?limit=2&continue=${encodeURIComponent(page1.body.metadata.continue)}`);
  t.equal(page2.status, 500);
  t.equal(page2.body.reason, 'InternalError');
  const retry = await api(fake, 'GET', `${coll()}?limit=2&continue=${encodeURIComponent(page1.body.metadata.continue)}`);
  t.equal(retry.status, 200);
  t.same(
    retry.body.items.map((i: Json) => i.metadata.name),
    ['c', 'd'],
  );

  fake.inject({ method: 'GET', match: (c) => c.query.continue !== undefined, status: 410 });
  const expired = await api(fake, 'GET', `${coll()}?limit=2&continue=${encodeURIComponent(page1.body.metadata.continue)}`);
  t.equal(expired.status, 410, 'match() can select on the query');
});

t.test('call counting', async (t) => {
  const fake = await start(t);
  await create(fake, 'a');
  await api(fake, 'GET', item('a'));
  await api(fake, 'GET', `${coll()}?limit=5&labelSelector=x%3Dy`);
  await api(fake, 'PATCH', `${item('a')}/status`, { body: { status: {} }, contentType: MERGE });
  t.equal(fake.count('GET'), 2);
  t.equal(fake.count('get', /\/apidefinitions$/), 1);
  t.equal(fake.count('POST', coll()), 1);
  t.equal(fake.count('PATCH', /\/status$/), 1);
  t.equal(fake.count('*'), 4);
  const list = fake.calls.find((c) => c.method === 'GET' && c.path === coll());
  t.same(list?.query, { limit: '5', labelSelector: 'x=y' });
  t.equal(list?.status, 200);
  const patch = fake.calls.find((c) => c.method === 'PATCH');
  t.equal(patch?.contentType, MERGE);
  t.same(patch?.body, { status: {} });
  fake.resetCalls();
  t.equal(fake.calls.length, 0);
  t.equal(fake.count('*'), 0);
});

t.test('direct API: put, getObject, listObjects, remove, markDeleting', async (t) => {
  const fake = await start(t);
  const events: string[] = [];
  fake.onEvent((e) => events.push(`${e.type} ${e.object.metadata.name}`));
  const seeded = fake.put({
    apiVersion: 'tyk.tyk.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name: 'httpbin', finalizers: ['f'], uid: 'fixed-uid' },
    spec: { name: 'httpbin' },
    status: { api_id: 'seeded', anything: true },
  });
  t.equal(seeded.metadata.namespace, 'default');
  t.equal(seeded.metadata.uid, 'fixed-uid', 'given metadata is kept');
  t.equal(seeded.metadata.generation, 1);
  t.same(seeded.status, { api_id: 'seeded', anything: true }, 'status as given');
  t.ok(seeded.metadata.resourceVersion);

  const same = fake.put({ ...seeded, metadata: { ...seeded.metadata, generation: undefined } });
  t.equal(same.metadata.generation, 1, 'replace without spec change keeps generation');
  const changed = fake.put({ ...seeded, metadata: { ...seeded.metadata, generation: undefined }, spec: { name: 'v2' } });
  t.equal(changed.metadata.generation, 2, 'replace with spec change bumps it');
  t.ok(Number(changed.metadata.resourceVersion) > Number(same.metadata.resourceVersion));

  const got = fake.getObject('apidefinitions', 'default', 'httpbin');
  t.same(got, changed);
  if (got) got.spec = { mutated: true };
  t.same(fake.getObject('apidefinitions.tyk.tyk.io', 'default', 'httpbin')?.spec, { name: 'v2' }, 'copies, not references');
  t.equal(fake.getObject('apidefinitions', 'default', 'nope'), undefined);

  fake.put({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'a', namespace: 'zzz' } });
  fake.put({ apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { name: 'b' } });
  t.same(
    fake.listObjects('apidefinitions').map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
    ['default/b', 'default/httpbin', 'zzz/a'],
  );
  t.equal(fake.listObjects('apidefinitions', 'zzz').length, 1);

  const marked = fake.markDeleting('apidefinitions', 'default', 'httpbin');
  t.ok(marked?.metadata.deletionTimestamp, 'finalizers keep it, marked');
  t.equal(fake.markDeleting('apidefinitions', 'default', 'b'), undefined, 'no finalizers: removed');
  t.ok(fake.remove('apidefinitions', 'default', 'httpbin'), 'remove ignores finalizers');
  t.notOk(fake.remove('apidefinitions', 'default', 'httpbin'));
  t.same(
    fake.listObjects('apidefinitions').map((o) => o.metadata.name),
    ['a'],
  );
  t.same(events, ['ADDED httpbin', 'MODIFIED httpbin', 'MODIFIED httpbin', 'ADDED a', 'ADDED b', 'MODIFIED httpbin', 'DELETED b', 'DELETED httpbin']);
  t.throws(() => fake.put({ apiVersion: 'x/v1', kind: 'Nope', metadata: { name: 'n' } }), /unknown kind/);
  t.throws(() => fake.getObject('widgets', 'default', 'n'), /unknown resource/);

  fake.unregisterResource('operatorcontexts');
  t.equal((await api(fake, 'GET', coll('default', 'operatorcontexts'))).status, 404, 'an unregistered kind is not served');
});

t.test('kubeconfig file and discovery', async (t) => {
  const fake = await start(t);
  const dir = await mkdtemp(join(tmpdir(), 'fake-kube-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = await fake.writeKubeconfig(dir);
  t.equal((await stat(path)).mode & 0o777, 0o600);
  const kc = new KubeConfig();
  kc.loadFromFile(path);
  t.equal(kc.getCurrentUser()?.token, fake.token);
  const list = await kc.makeApiClient(CustomObjectsApi).listClusterCustomObject({ group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'securitypolicies' });
  t.same(list.items, []);

  const version = await api(fake, 'GET', '/version', { token: null });
  t.equal(version.status, 200, '/version answers anonymously');
  t.equal(version.body.major, '1');
  t.equal((await api(fake, 'GET', '/readyz', { token: null })).body, 'ok');
  t.equal((await api(fake, 'GET', '/version', { token: 'wrong' })).status, 401, 'but not with a wrong token');
  const resources = await api(fake, 'GET', APIS);
  t.equal(resources.body.kind, 'APIResourceList');
  t.ok(resources.body.resources.some((r: Json) => r.name === 'apidefinitions/status'));
  t.same(
    resources.body.resources.map((r: Json) => r.name).sort(),
    [
      'apidefinitions',
      'apidefinitions/status',
      'apidescriptions',
      'apidescriptions/status',
      'operatorcontexts',
      'operatorcontexts/status',
      'portalapicatalogues',
      'portalapicatalogues/status',
      'portalconfigs',
      'portalconfigs/status',
      'securitypolicies',
      'securitypolicies/status',
      'subgraphs',
      'subgraphs/status',
      'supergraphs',
      'supergraphs/status',
      'tykoasapidefinitions',
      'tykoasapidefinitions/status',
    ],
    'the kinds of deploy/crds, each with its status subresource',
  );
  const groups = await api(fake, 'GET', '/apis');
  t.same(
    groups.body.groups.map((g: Json) => g.name),
    ['networking.k8s.io', 'tyk.tyk.io'],
    'the built-in networking.k8s.io (Ingress) and the CRDs’ group',
  );
  const core = await api(fake, 'GET', '/api/v1');
  t.same(
    core.body.resources.map((r: Json) => r.name),
    ['secrets', 'configmaps', 'services', 'services/status', 'namespaces', 'namespaces/status', 'events'],
    'the core kinds we read (an HTTPRoute backend’s Service, Namespaces’ labels) and write (Events)',
  );
  t.same(
    core.body.resources.filter((r: Json) => r.name === 'namespaces' || r.name === 'services').map((r: Json) => `${String(r.name)} ${String(r.namespaced)}`),
    ['services true', 'namespaces false'],
    'Namespaces are cluster-scoped',
  );
});

// ---------------------------------------------------------------------------------------------
// Schema validation (a purpose-made CRD, test/fixtures/widget-crd.yaml, and our deploy/crds)

const WIDGET_CRD = fileURLToPath(new URL('../fixtures/widget-crd.yaml', import.meta.url));
const WIDGETS = '/apis/test.example.com/v1/namespaces/default/widgets';
const widgetPath = (name: string): string => `${WIDGETS}/${name}`;

function widget(name: string, spec: Record<string, unknown> = {}): Json {
  return { apiVersion: 'test.example.com/v1', kind: 'Widget', metadata: { name }, spec: { name: 'abc', ...spec } };
}

async function startWidgets(tt: Teardown, options: FakeKubeApiServerOptions = {}): Promise<FakeKubeApiServer> {
  return start(tt, { crds: [WIDGET_CRD], ...options });
}

/** The 422 body kube-apiserver answers for a Widget named `name` with these causes. */
function widgetInvalid(name: string, causes: Cause[]): Json {
  return invalidStatus('Widget', 'test.example.com', name, causes);
}

const typeError = (field: string, want: string, got: string): { field: string; reason: string; message: string } => ({
  field,
  reason: 'FieldValueInvalid',
  message: `Invalid value: "${got}": ${field} in body must be of type ${want}: "${got}"`,
});

t.test('schema: a spec field of the wrong type is 422 Invalid, integer is not number', async (t) => {
  const fake = await startWidgets(t);
  const r = await api(fake, 'POST', WIDGETS, { body: widget('w', { replicas: '3' }) });
  t.equal(r.status, 422);
  t.same(r.body, widgetInvalid('w', [typeError('spec.replicas', 'integer', 'string')]), 'the exact Status body');
  t.same((await api(fake, 'POST', WIDGETS, { body: widget('w', { replicas: 1.5 }) })).body.details.causes, [
    { reason: 'FieldValueInvalid', message: 'Invalid value: "number": spec.replicas in body must be of type integer: "number"', field: 'spec.replicas' },
  ]);
  t.equal((await api(fake, 'GET', widgetPath('w'))).status, 404, 'nothing was created');
  const ok = await api(fake, 'POST', WIDGETS, { body: widget('w', { replicas: 2.0, ratio: 0.5, step: 1.5, size: 12345678901 }) });
  t.equal(ok.status, 201, 'an integral number is an integer; an integer is a number; int64 is not checked');
  const objects = await api(fake, 'POST', WIDGETS, { body: widget('v', { labels: [], tags: { a: 1 }, note: 5 }) });
  t.same(objects.body.details.causes.map((c: Json) => c.message).sort(), [
    'Invalid value: "array": spec.labels in body must be of type object: "array"',
    'Invalid value: "integer": spec.note in body must be of type string: "integer"',
    'Invalid value: "object": spec.tags in body must be of type array: "object"',
  ]);
});

t.test('schema: a missing required field is 422 Required value', async (t) => {
  const fake = await startWidgets(t);
  const body = widget('w');
  delete body.spec.name;
  const r = await api(fake, 'POST', WIDGETS, { body });
  t.same(r.body, widgetInvalid('w', [{ field: 'spec.name', reason: 'FieldValueRequired', message: 'Required value' }]));
  const noSpec = await api(fake, 'POST', WIDGETS, { body: { apiVersion: 'test.example.com/v1', kind: 'Widget', metadata: { name: 'x' } } });
  t.equal(noSpec.status, 201, 'a required field of an absent object is not required');
});

t.test('schema: enum, bounds, lengths, pattern, items, properties, formats, int-or-string', async (t) => {
  const fake = await startWidgets(t);
  const causes = async (spec: Record<string, unknown>): Promise<string[]> => {
    const r = await api(fake, 'POST', WIDGETS, { body: widget('w', spec) });
    t.equal(r.status, 422, JSON.stringify(spec));
    return (r.body.details?.causes ?? []).map((c: Json) => `${c.field}: ${c.message} (${c.reason})`);
  };
  t.same(await causes({ protocol: 'x' }), ['spec.protocol: Unsupported value: "x": supported values: "h2c", "http", "https" (FieldValueNotSupported)']);
  t.same(await causes({ protocol: 5 }), [
    'spec.protocol: Invalid value: "integer": spec.protocol in body must be of type string: "integer" (FieldValueInvalid)',
    'spec.protocol: Unsupported value: 5: supported values: "h2c", "http", "https" (FieldValueNotSupported)',
  ]);
  t.same(await causes({ replicas: 6 }), ['spec.replicas: Invalid value: 6: spec.replicas in body should be less than or equal to 5 (FieldValueInvalid)']);
  t.same(await causes({ replicas: -1 }), ['spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0 (FieldValueInvalid)']);
  t.same(await causes({ ratio: 0 }), ['spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0 (FieldValueInvalid)']);
  t.same(await causes({ ratio: 1 }), ['spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1 (FieldValueInvalid)']);
  t.same(await causes({ step: 0.25 }), ['spec.step: Invalid value: 0.25: spec.step in body should be a multiple of 0.5 (FieldValueInvalid)']);
  t.same(await causes({ name: 'a' }), ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long (FieldValueInvalid)']);
  t.same(await causes({ name: 'abcdefghijk' }), ['spec.name: Invalid value: "abcdefghijk": spec.name in body should be at most 10 chars long (FieldValueInvalid)']);
  t.same(await causes({ name: 'ab1' }), ['spec.name: Invalid value: "ab1": spec.name in body should match \'^[a-z]+$\' (FieldValueInvalid)']);
  t.same(await causes({ tags: [] }), ['spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items (FieldValueInvalid)']);
  t.same(await causes({ tags: ['a', 'b', 'c'] }), ['spec.tags: Invalid value: 3: spec.tags in body should have at most 2 items (FieldValueInvalid)']);
  t.same(
    await causes({ tags: ['a', 7] }),
    ['spec.tags: Invalid value: "integer": spec.tags in body must be of type string: "integer" (FieldValueInvalid)'],
    'kube-openapi 1.20 leaves list indices out of the path',
  );
  t.same(await causes({ labels: { a: 'x', b: 'y', c: 'z' } }), ['spec.labels: Invalid value: 2: spec.labels in body should have at most 2 properties (FieldValueInvalid)']);
  t.same(
    await causes({ labels: { a: 1 } }),
    ['spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer" (FieldValueInvalid)'],
    'additionalProperties validates map values',
  );
  t.same(await causes({ selector: {} }), ['spec.selector: Invalid value: 1: spec.selector in body should have at least 1 properties (FieldValueInvalid)']);
  t.same(await causes({ since: '2024-05-06 07:08:09' }), ['spec.since: Invalid value: "2024-05-06 07:08:09": spec.since in body must be of type date-time: "2024-05-06 07:08:09" (FieldValueInvalid)']);
  t.same(await causes({ digest: 'not base64!' }), ['spec.digest: Invalid value: "not base64!": spec.digest in body must be of type byte: "not base64!" (FieldValueInvalid)']);
  t.same(await causes({ port: true }), ['spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean" (FieldValueInvalid)']);
  const two = await api(fake, 'POST', WIDGETS, { body: widget('w', { protocol: 'x', replicas: 9 }) });
  t.match(two.body.message, /^Widget\.test\.example\.com "w" is invalid: \[spec\.\w+: .*, spec\.\w+: .*\]$/, 'several errors are joined as [a, b]');
  t.equal(two.body.details.causes.length, 2);

  const ok = await api(fake, 'POST', WIDGETS, {
    body: widget('ok', { port: 'http', since: '2024-05-06T07:08:09.5+02:00', digest: 'YWJj', protocol: 'h2c', tags: ['a'], labels: { a: 'b' } }),
  });
  t.equal(ok.status, 201, 'valid values pass');
  t.equal((await api(fake, 'POST', WIDGETS, { body: widget('ok2', { port: 8080, since: '2024-05-06T07:08:09Z' }) })).status, 201);
});

t.test('schema: defaults fill absent fields', async (t) => {
  const fake = await startWidgets(t);
  const r = await api(fake, 'POST', WIDGETS, { body: widget('w') });
  t.equal(r.body.spec.mode, 'fast');
  const kept = await api(fake, 'POST', WIDGETS, { body: widget('v', { mode: 'slow' }) });
  t.equal(kept.body.spec.mode, 'slow');
});

t.test('schema: unknown fields are pruned at every depth, on create and on status patch; preserve-unknown-fields keeps them', async (t) => {
  const fake = await startWidgets(t);
  const created = await api(fake, 'POST', WIDGETS, {
    body: {
      ...widget('w', { bogus: 1, labels: { any: 'x' }, extra: { free: { deep: [1] }, known: { a: 'kept', b: 'dropped' } } }),
      status: { id: 'dropped with status' },
      top: true,
    },
  });
  t.equal(created.status, 201);
  t.same(created.body.spec, { name: 'abc', labels: { any: 'x' }, extra: { free: { deep: [1] }, known: { a: 'kept' } }, mode: 'fast' });
  t.notOk('top' in created.body);
  t.same(created.headers.get('warning'), ['spec.bogus', 'spec.extra.known.b', 'top'].map((f) => `299 - "unknown field \\"${f}\\""`).join(', '), 'each pruned path is a warning');
  const strict = await api(fake, 'POST', `${WIDGETS}?fieldValidation=Strict`, { body: widget('s', { extra: { known: { z: 1 } } }) });
  t.equal(strict.status, 400);
  t.equal(strict.body.message, 'strict decoding error: unknown field "spec.extra.known.z"');

  const patched = await api(fake, 'PATCH', `${widgetPath('w')}/status`, {
    body: { status: { id: 'a', bogus: { x: 1 }, items: [{ type: 'Ready', ok: true, why: 'pruned' }] } },
    contentType: MERGE,
  });
  t.equal(patched.status, 200);
  t.same(patched.body.status, { id: 'a', items: [{ type: 'Ready', ok: true }] }, 'pruned silently, in lists too');
  t.match(patched.headers.get('warning') ?? '', /unknown field \\"status\.items\[0\]\.why\\"/);
});

t.test('schema: nulls, as kube-apiserver treats them', async (t) => {
  const fake = await startWidgets(t);
  await api(fake, 'POST', WIDGETS, { body: widget('w', { replicas: 2, note: 'n' }) });

  const removed = await api(fake, 'PATCH', widgetPath('w'), { body: { spec: { replicas: null, tags: [null, 'a'] } }, contentType: MERGE });
  t.equal(removed.status, 200, 'a merge patch null removes the field; nulls in what it adds are pruned');
  t.same(removed.body.spec, { name: 'abc', note: 'n', mode: 'fast', tags: ['a'] });

  const current = removed.body;
  const put = await api(fake, 'PUT', widgetPath('w'), { body: { ...current, spec: { ...current.spec, replicas: null, note: null } } });
  t.equal(put.status, 200);
  t.same(put.body.spec, { name: 'abc', note: null, mode: 'fast', tags: ['a'] }, 'a non-nullable null is dropped; a nullable one is kept');

  const defaulted = await api(fake, 'PATCH', widgetPath('w'), { body: [{ op: 'replace', path: '/spec/mode', value: null }], contentType: JSON_PATCH });
  t.equal(defaulted.body.spec.mode, 'fast', 'a non-nullable null with a default is defaulted');

  const item = await api(fake, 'PATCH', widgetPath('w'), { body: [{ op: 'add', path: '/spec/tags/-', value: null }], contentType: JSON_PATCH });
  t.same(item.body, widgetInvalid('w', [typeError('spec.tags', 'string', 'null')]), 'a null list item is validated');
});

t.test('schema: a status merge patch that removes a required field is 422 and the status is kept', async (t) => {
  const fake = await startWidgets(t);
  await api(fake, 'POST', WIDGETS, { body: widget('w') });
  const set = await api(fake, 'PATCH', `${widgetPath('w')}/status`, { body: { status: { id: 'abc', phase: 'Ready' } }, contentType: MERGE });
  t.same(set.body.status, { id: 'abc', phase: 'Ready' });
  const rv = fake.resourceVersion;

  const nulled = await api(fake, 'PATCH', `${widgetPath('w')}/status`, { body: { status: { id: null, phase: null } }, contentType: MERGE });
  t.equal(nulled.status, 422);
  t.same(nulled.body, widgetInvalid('w', [{ field: 'status.id', reason: 'FieldValueRequired', message: 'Required value' }]));
  t.same(fake.getObject('widgets', 'default', 'w')?.status, { id: 'abc', phase: 'Ready' }, 'the object keeps its old status');
  t.equal(fake.resourceVersion, rv, 'nothing written');

  const optional = await api(fake, 'PATCH', `${widgetPath('w')}/status`, { body: { status: { phase: null } }, contentType: MERGE });
  t.same(optional.body.status, { id: 'abc' }, 'null removes a field that is not required');
});

t.test('schema: "" in a typed, non-nullable field is refused as null (kube-apiserver 1.20 built with Go >= 1.16)', async (t) => {
  const fake = await startWidgets(t);
  await api(fake, 'POST', WIDGETS, { body: widget('w') });
  await api(fake, 'PATCH', `${widgetPath('w')}/status`, { body: { status: { id: 'abc', count: 1 } }, contentType: MERGE });
  const empty = await api(fake, 'PATCH', `${widgetPath('w')}/status`, { body: { status: { id: '', count: '' } }, contentType: MERGE });
  t.same(empty.body, widgetInvalid('w', [typeError('status.id', 'string', 'null'), typeError('status.count', 'integer', 'null')]));
  t.same(fake.getObject('widgets', 'default', 'w')?.status, { id: 'abc', count: 1 }, 'the object keeps its old status');
  const nullable = await api(fake, 'PATCH', widgetPath('w'), { body: { spec: { note: '' } }, contentType: MERGE });
  t.equal(nullable.status, 200, 'a nullable field takes ""');

  const official = await startWidgets(t, { emptyStringIsNull: false });
  await api(official, 'POST', WIDGETS, { body: widget('w') });
  const accepted = await api(official, 'PATCH', `${widgetPath('w')}/status`, { body: { status: { id: '' } }, contentType: MERGE });
  t.equal(accepted.status, 200, 'emptyStringIsNull: false models the official build and 1.21+');
  t.equal(accepted.body.status.id, '');
});

t.test('schema: PUT and JSON patch are validated, on the main resource and on status', async (t) => {
  const fake = await startWidgets(t);
  const v1 = (await api(fake, 'POST', WIDGETS, { body: widget('w') })).body;
  const rv = fake.resourceVersion;

  const put = await api(fake, 'PUT', widgetPath('w'), { body: { ...v1, spec: { ...v1.spec, replicas: 'x' } } });
  t.same(put.body, widgetInvalid('w', [typeError('spec.replicas', 'integer', 'string')]));
  const jsonPatch = await api(fake, 'PATCH', widgetPath('w'), { body: [{ op: 'remove', path: '/spec/name' }], contentType: JSON_PATCH });
  t.same(jsonPatch.body, widgetInvalid('w', [{ field: 'spec.name', reason: 'FieldValueRequired', message: 'Required value' }]));

  const statusPut = await api(fake, 'PUT', `${widgetPath('w')}/status`, { body: { ...v1, status: { id: 'a', count: 'many' } } });
  t.same(statusPut.body, widgetInvalid('w', [typeError('status.count', 'integer', 'string')]));
  const statusJsonPatch = await api(fake, 'PATCH', `${widgetPath('w')}/status`, {
    body: [{ op: 'add', path: '/status', value: { phase: 'Ready' } }],
    contentType: JSON_PATCH,
  });
  t.same(statusJsonPatch.body, widgetInvalid('w', [{ field: 'status.id', reason: 'FieldValueRequired', message: 'Required value' }]));
  t.equal(fake.resourceVersion, rv, 'no refused write was stored');

  const mainWithBadStatus = await api(fake, 'PATCH', widgetPath('w'), { body: { spec: { replicas: 1 }, status: { count: 'x' } }, contentType: MERGE });
  t.equal(mainWithBadStatus.status, 200, 'a main-resource write ignores status, so its status is not validated');
  t.notOk('status' in mainWithBadStatus.body);
  const statusOnly = await api(fake, 'PATCH', `${widgetPath('w')}/status`, { body: { spec: { replicas: 'x' }, status: { id: 'a' } }, contentType: MERGE });
  t.equal(statusOnly.status, 200, 'a status write ignores spec, so a bad spec in it is not seen');
  t.equal(statusOnly.body.spec.replicas, 1);
});

t.test('schema: x-kubernetes-list-type map and set refuse duplicates, ratcheted on update', async (t) => {
  const fake = await startWidgets(t);
  await api(fake, 'POST', WIDGETS, { body: widget('w') });
  const dup = await api(fake, 'PATCH', `${widgetPath('w')}/status`, {
    body: { status: { id: 'a', items: [{ type: 'A' }, { type: 'A', ok: true }], seen: ['x', 'y', 'x'] } },
    contentType: MERGE,
  });
  t.same(
    dup.body,
    widgetInvalid('w', [
      { field: 'status.items[1]', reason: 'FieldValueDuplicate', message: 'Duplicate value: map[string]interface {}{"type":"A"}' },
      { field: 'status.seen[2]', reason: 'FieldValueDuplicate', message: 'Duplicate value: "x"' },
    ]),
  );
  const notObject = await api(fake, 'PATCH', `${widgetPath('w')}/status`, { body: { status: { id: 'a', items: [{ type: 'A' }, 'B'] } }, contentType: MERGE });
  t.equal(notObject.body.details.causes.find((c: Json) => c.field === 'status.items[1]')?.message, 'Invalid value: "B": must be an object for an array of list-type map');

  fake.put({ ...widget('old'), status: { id: 'a', seen: ['x', 'x'] } });
  const ratchet = await api(fake, 'PATCH', `${widgetPath('old')}/status`, { body: { status: { phase: 'still' } }, contentType: MERGE });
  t.equal(ratchet.status, 200, 'an object that already broke the rule may still be updated');
});

t.test('default CRDs: ours from deploy/crds; "" in status.api_id is the recorded 422, null removes it', async (t) => {
  const fake = await start(t);
  const created = await create(fake, 'httpbin');
  const ok = await api(fake, 'PATCH', `${item('httpbin')}/status`, {
    body: { status: { api_id: 'abc', latestTransaction: { status: 'Successful', time: '2024-05-06T07:08:09Z' }, custom: 1 } },
    contentType: MERGE,
  });
  t.same(ok.body.status, { api_id: 'abc', latestTransaction: { status: 'Successful', time: '2024-05-06T07:08:09Z' }, custom: 1 }, 'our status keeps unknown fields');
  const empty = await api(fake, 'PATCH', `${item('httpbin')}/status`, { body: { status: { api_id: '' } }, contentType: MERGE });
  t.equal(empty.status, 422);
  t.same(empty.body, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'ApiDefinition.tyk.tyk.io "httpbin" is invalid: status.api_id: Invalid value: "null": status.api_id in body must be of type string: "null"',
    reason: 'Invalid',
    details: {
      name: 'httpbin',
      group: 'tyk.tyk.io',
      kind: 'ApiDefinition',
      causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: "null": status.api_id in body must be of type string: "null"', field: 'status.api_id' }],
    },
    code: 422,
  });
  t.equal(fake.getObject('apidefinitions', 'default', 'httpbin')?.status?.api_id, 'abc', 'the object keeps its old status');
  const nulled = await api(fake, 'PATCH', `${item('httpbin')}/status`, { body: { status: { api_id: null, latestTransaction: { error: null } } }, contentType: MERGE });
  t.equal(nulled.status, 200, 'our CRD does not require status.api_id: null removes it');
  t.same(nulled.body.status, { latestTransaction: { status: 'Successful', time: '2024-05-06T07:08:09Z' }, custom: 1 });
  const badCondition = await api(fake, 'PATCH', `${item('httpbin')}/status`, { body: { status: { conditions: [{ type: 'Ready', status: 'Maybe' }] } }, contentType: MERGE });
  t.equal(badCondition.status, 422, 'conditions follow metav1.Condition');
  const missingRef = await api(fake, 'PATCH', item('httpbin'), {
    body: { metadata: { resourceVersion: created.metadata.resourceVersion }, spec: { contextRef: { namespace: 'x' } } },
    contentType: MERGE,
  });
  t.equal(missingRef.status, 409, 'preconditions come first');
  const refWithoutName = await api(fake, 'PATCH', item('httpbin'), { body: { spec: { contextRef: { namespace: 'x' } } }, contentType: MERGE });
  t.same(refWithoutName.body.details.causes, [{ reason: 'FieldValueRequired', message: 'Required value', field: 'spec.contextRef.name' }]);
});

t.test('CRDs: loaded from files and directories; what cannot be modelled throws', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'fake-crds-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const fromDir = await start(t, { crds: [dirname(WIDGET_CRD)] });
  t.equal((await api(fromDir, 'GET', WIDGETS)).body.kind, 'WidgetList', 'a directory: every CRD in its YAML files');
  t.equal((await api(fromDir, 'GET', coll())).status, 404, 'only the CRDs given are served');
  const none = await start(t, { crds: [] });
  t.same(
    (await api(none, 'GET', '/apis')).body.groups.map((g: Json) => g.name),
    ['networking.k8s.io'],
    'no CRD: only the built-in group',
  );

  const write = async (name: string, text: string): Promise<string> => {
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  };
  const crd = (versions: string, apiVersion = 'apiextensions.k8s.io/v1'): string =>
    `apiVersion: ${apiVersion}\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.x.io}\nspec:\n  group: x.io\n  scope: Cluster\n  names: {kind: Gadget, plural: gadgets}\n  versions: ${versions}\n`;
  const v1 = (schema: string): string => `[{name: v1, served: true, storage: true, schema: {openAPIV3Schema: ${schema}}}]`;
  const cluster = new FakeKubeApiServer({ crds: [await write('ok.yaml', crd(v1('{type: object}')))] });
  t.ok(cluster, 'a cluster-scoped CRD without status loads');
  const cases: [string, string, RegExp][] = [
    ['beta.yaml', crd(v1('{type: object}'), 'apiextensions.k8s.io/v1beta1'), /only apiextensions\.k8s\.io\/v1 CRDs/],
    [
      'two.yaml',
      crd(`[{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}, {name: v2, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}]`),
      /exactly one served version/,
    ],
    ['noschema.yaml', crd('[{name: v1, served: true, storage: true}]'), /no openAPIV3Schema/],
    ['cel.yaml', crd(v1("{type: object, x-kubernetes-validations: [{rule: 'true'}]}")), /keyword x-kubernetes-validations is not modelled/],
    ['oneof.yaml', crd(v1('{type: object, properties: {a: {oneOf: [{required: [b]}]}}}')), /\.a: keyword oneOf is not modelled/],
    ['closed.yaml', crd(v1('{type: object, additionalProperties: false}')), /additionalProperties: false is not structural/],
    ['tuple.yaml', crd(v1('{type: array, items: [{type: string}]}')), /single items schema/],
    ['email.yaml', crd(v1('{type: string, format: email}')), /format email is not modelled/],
    ['unique.yaml', crd(v1('{type: array, items: {type: string}, uniqueItems: true}')), /uniqueItems cannot be set to true/],
  ];
  for (const [name, text, error] of cases) {
    const path = await write(name, text);
    t.throws(() => new FakeKubeApiServer({ crds: [path] }), error, name);
  }
});

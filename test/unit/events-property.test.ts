/**
 * Property-based tests of the event parsers: arbitrary and mutated bodies never crash them.
 * Each parser either returns items or throws a BadRequestError (a 4xx with a reason) —
 * never any other error.
 */
import fc from 'fast-check';
import t from 'tap';
import { parseAuditEventList } from '../../lib/events/audit.js';
import { cloudEventItems, parseCloudEvents } from '../../lib/events/cloudevents.js';
import { collect, type EventItem } from '../../lib/events/refs.js';
import { parseWatchEvents } from '../../lib/events/watch.js';
import { BadRequestError } from '../../lib/platform/errors.js';

const RUNS = 3_000;

/** true when `fn` returned items or threw a BadRequestError with a non-empty message */
function wellBehaved(fn: () => EventItem[]): boolean {
  try {
    const items = fn();
    collect(items, { maxRefs: 5 });
    return Array.isArray(items);
  } catch (err) {
    if (err instanceof BadRequestError && err.message.length > 0 && err.statusCode >= 400 && err.statusCode < 500) return true;
    throw err;
  }
}

const apiObject = fc.record({
  apiVersion: fc.constantFrom('tyk.tyk.io/v1alpha1', 'v1', 'apps/v1', ''),
  kind: fc.constantFrom('ApiDefinition', 'SecurityPolicy', 'Pod', ''),
  metadata: fc.record({ name: fc.string(), namespace: fc.string() }, { requiredKeys: [] }),
});
const watchEvent = fc.record({ type: fc.constantFrom('ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR', 'NOPE'), object: fc.oneof(apiObject, fc.anything()) }, { requiredKeys: ['type'] });
const auditEvent = fc.record(
  {
    auditID: fc.string(),
    stage: fc.constantFrom('ResponseComplete', 'RequestReceived', 'Panic'),
    verb: fc.constantFrom('create', 'update', 'patch', 'delete', 'deletecollection', 'get', 'watch'),
    requestURI: fc.string(),
    user: fc.record({ username: fc.string() }),
    objectRef: fc.record(
      {
        apiGroup: fc.constantFrom('tyk.tyk.io', '', 'apps'),
        resource: fc.constantFrom('apidefinitions', 'securitypolicies', 'pods', 'portalconfigs'),
        subresource: fc.constantFrom('status', 'scale', ''),
        namespace: fc.string(),
        name: fc.string(),
      },
      { requiredKeys: [] },
    ),
    responseStatus: fc.record({ code: fc.oneof(fc.integer({ min: 100, max: 599 }), fc.string()) }),
    responseObject: fc.anything(),
  },
  { requiredKeys: [] },
);
const cloudEvent = fc.record(
  {
    specversion: fc.constantFrom('1.0', '0.3', 1),
    id: fc.string(),
    source: fc.string(),
    type: fc.constantFrom('dev.knative.apiserver.resource.add', 'dev.knative.apiserver.ref.delete', 'x'),
    subject: fc.oneof(fc.string(), fc.constant('/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions/a')),
    data: fc.oneof(
      apiObject,
      watchEvent,
      fc.anything(),
      fc.record({ type: fc.constantFrom('ADD', 'UPDATE', 'DELETE'), body: apiObject, group: fc.constantFrom('tyk.tyk.io', ''), resource: fc.string() }),
    ),
    data_base64: fc.base64String(),
  },
  { requiredKeys: [] },
);

/** A valid body, then a character-level mutation of it: the hostile-forwarder case. */
function mutated(valid: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc.tuple(valid, fc.nat(), fc.nat({ max: 8 }), fc.string({ maxLength: 4 })).map(([s, at, cut, insert]) => {
    const i = s.length === 0 ? 0 : at % s.length;
    return s.slice(0, i) + insert + s.slice(i + cut);
  });
}

t.test('watch parser: arbitrary and mutated bodies', async (t) => {
  fc.assert(
    fc.property(fc.string(), (s) => wellBehaved(() => parseWatchEvents(s))),
    { numRuns: RUNS },
  );
  fc.assert(
    fc.property(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      (s) => wellBehaved(() => parseWatchEvents(s)),
    ),
    { numRuns: RUNS },
  );
  fc.assert(
    fc.property(
      fc.array(watchEvent).map((a) => JSON.stringify(a)),
      (s) => wellBehaved(() => parseWatchEvents(s)),
    ),
    { numRuns: RUNS },
  );
  fc.assert(
    fc.property(mutated(fc.array(watchEvent, { minLength: 1 }).map((a) => a.map((e) => JSON.stringify(e)).join('\n'))), (s) => wellBehaved(() => parseWatchEvents(s))),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS * 4} bodies, no crash`);
});

t.test('audit parser: arbitrary and mutated bodies', async (t) => {
  const list = fc.array(auditEvent).map((items) => JSON.stringify({ kind: 'EventList', apiVersion: 'audit.k8s.io/v1', items }));
  fc.assert(
    fc.property(fc.string(), (s) => wellBehaved(() => parseAuditEventList(s))),
    { numRuns: RUNS },
  );
  fc.assert(
    fc.property(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      (s) => wellBehaved(() => parseAuditEventList(s)),
    ),
    { numRuns: RUNS },
  );
  fc.assert(
    fc.property(list, fc.string(), (s, me) => wellBehaved(() => parseAuditEventList(s, me))),
    { numRuns: RUNS },
  );
  fc.assert(
    fc.property(mutated(list), (s) => wellBehaved(() => parseAuditEventList(s))),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS * 4} bodies, no crash`);
});

t.test('CloudEvents parser: arbitrary and mutated bodies in every mode', async (t) => {
  const ce = (headers: Record<string, string | undefined>, body: string) => wellBehaved(() => cloudEventItems(parseCloudEvents({ headers, body })));
  const structured = { 'content-type': 'application/cloudevents+json' };
  const batch = { 'content-type': 'application/cloudevents-batch+json' };
  fc.assert(
    fc.property(fc.string(), (s) => ce(structured, s) && ce(batch, s) && ce({}, s)),
    { numRuns: RUNS },
  );
  fc.assert(
    fc.property(mutated(cloudEvent.map((e) => JSON.stringify(e))), (s) => ce(structured, s)),
    { numRuns: RUNS },
  );
  fc.assert(
    fc.property(mutated(fc.array(cloudEvent).map((e) => JSON.stringify(e))), (s) => ce(batch, s)),
    { numRuns: RUNS },
  );
  const binaryHeaders = fc.record(
    {
      'ce-specversion': fc.constantFrom('1.0', '2'),
      'ce-id': fc.string(),
      'ce-source': fc.string(),
      'ce-type': fc.string(),
      'ce-subject': fc.string(),
      'content-type': fc.constantFrom('application/json', 'text/plain'),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(
      binaryHeaders,
      fc.oneof(
        fc.string(),
        fc.jsonValue().map((v) => JSON.stringify(v)),
      ),
      (h, s) => ce(h, s),
    ),
    { numRuns: RUNS },
  );
  t.pass(`${RUNS * 6} bodies, no crash`);
});

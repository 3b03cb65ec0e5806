/**
 * The admission webhook's pure parts (lib/triggers/admission.ts): an AdmissionReview read
 * (parseReview), a dry run's reports turned into a verdict (verdictOf: what denies, with which
 * reason and code, what warns, what another namespace's resource may show), and the answer
 * (reviewResponse).
 */
import t from 'tap';
import type { ObjectReport } from '../../lib/engine/types.js';
import { BadRequestError } from '../../lib/platform/errors.js';
import { parseReview, reviewResponse, verdictOf } from '../../lib/triggers/admission.js';
import { admissionReview } from '../fixtures/admission.js';
import { apiDefinition } from '../fixtures/builders.js';

const self = { kind: 'ApiDefinition', namespace: 'team-a', name: 'orders' };
function report(o: Partial<ObjectReport> & Pick<ObjectReport, 'result'>): ObjectReport {
  return { kind: 'ApiDefinition', namespace: 'team-a', name: 'orders', id: 'id', action: 'NOOP', reason: 'unchanged', ...o };
}

t.test('verdictOf: invalid and refusals deny with the reason, its code and the run’s message; the first denial gives the status', async (t) => {
  t.same(verdictOf([report({ result: 'invalid', reason: 'invalid spec', error: 'spec is missing' })], self, 'team-a'), {
    allowed: false,
    status: { code: 422, reason: 'Invalid', message: 'Invalid: spec is missing' },
  });
  for (const [code, reason] of [
    ['REF_NOT_PERMITTED', 'RefNotPermitted'],
    ['URL_NOT_PERMITTED', 'UrlNotPermitted'],
    ['ID_CLAIMED', 'IdClaimed'],
    ['ADOPTION_NOT_PERMITTED', 'AdoptionNotPermitted'],
    ['LISTEN_PATH_CLASH', 'ListenPathClash'],
  ] as const) {
    t.same(verdictOf([report({ result: 'failed', code, error: 'why' })], self, 'team-a'), { allowed: false, status: { code: 403, reason, message: `${reason}: why` } }, code);
  }
  t.match(verdictOf([report({ kind: 'HTTPRoute', result: 'invalid', code: 'ROUTE_UNSUPPORTED', error: 'spec.rules[0]…' })], { ...self, kind: 'HTTPRoute' }, 'team-a'), {
    status: { code: 422, reason: 'UnsupportedValue' },
  });
});

t.test('verdictOf: a wait or a check that could not be made admits with a warning; anything else admits silently', async (t) => {
  t.same(verdictOf([report({ result: 'waiting', reason: 'waiting for dependency', error: 'Secret team-a/x does not exist' })], self, 'team-a'), {
    allowed: true,
    warnings: ['Waiting: Secret team-a/x does not exist'],
  });
  t.same(verdictOf([report({ result: 'failed', code: 'GATEWAY_UNAVAILABLE', error: 'gateway default: ECONNREFUSED' })], self, 'team-a'), {
    allowed: true,
    warnings: ['not checked: gateway default: ECONNREFUSED'],
  });
  for (const result of ['planned', 'unchanged', 'synced', 'skipped', 'paused'] as const) t.same(verdictOf([report({ result })], self, 'team-a'), { allowed: true }, result);
  t.same(verdictOf([], self, 'team-a'), { allowed: true }, 'nothing reported: admitted');
});

t.test('verdictOf: the resources a change concerns are named, those of another namespace by kind only, without their message', async (t) => {
  const dependents = [
    report({ kind: 'TykOasApiDefinition', name: 'pets', result: 'invalid', reason: 'invalid spec', error: 'ConfigMap team-a/doc key oas.json is not valid JSON' }),
    report({ kind: 'TykOasApiDefinition', namespace: 'team-b', name: 'secret-name', result: 'invalid', reason: 'invalid spec', error: 'team-b detail' }),
  ];
  const v = verdictOf(dependents, undefined, 'team-a');
  t.equal(v.allowed, false);
  t.equal(
    v.status?.message,
    'TykOasApiDefinition team-a/pets would be Invalid: ConfigMap team-a/doc key oas.json is not valid JSON; a TykOasApiDefinition of another namespace would be Invalid: invalid spec',
  );
  t.notMatch(v.status?.message, /team-b|secret-name/, 'nothing of the other namespace');
});

t.test('reviewResponse: the request’s uid, the verdict, the status of a denial; warnings cut to what the API server shows', async (t) => {
  t.same(reviewResponse('u1', { allowed: true }), { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'u1', allowed: true } });
  const long = 'x'.repeat(200);
  const r = reviewResponse('u2', { allowed: false, status: { code: 403, reason: 'IdClaimed', message: 'm' }, warnings: [long, 'short'] }).response as Record<string, unknown>;
  t.same(r.status, { code: 403, reason: 'IdClaimed', message: 'm' });
  t.same(r.warnings, [`${'x'.repeat(117)}...`, 'short']);
});

t.test('parseReview: what an AdmissionReview asks; the request’s namespace for an object that does not say it; what is missing is a 400 naming it', async (t) => {
  const body = admissionReview('CREATE', apiDefinition('a').build()).build() as { request: Record<string, unknown> };
  const r = parseReview(JSON.stringify(body));
  t.match(r, {
    operation: 'CREATE',
    resource: { group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'apidefinitions', kind: 'ApiDefinition' },
    object: { metadata: { name: 'a', namespace: 'default' } },
    username: 'kubernetes-admin',
  });
  const object = body.request.object as { metadata: Record<string, unknown> };
  const { namespace: _ns, ...withoutNamespace } = object.metadata;
  const unplaced = parseReview(JSON.stringify({ ...body, request: { ...body.request, namespace: 'team-a', object: { ...object, metadata: withoutNamespace } } }));
  t.equal(unplaced.object?.metadata.namespace, 'team-a');
  const del = parseReview(JSON.stringify(admissionReview('DELETE', apiDefinition('a').build()).build()));
  t.equal(del.object, undefined, 'a DELETE carries no object to check');
  t.throws(() => parseReview(JSON.stringify({ ...body, request: { ...body.request, object: undefined } })), BadRequestError);
  t.throws(() => parseReview(JSON.stringify({ ...body, request: { ...body.request, resource: {} } })), /request\.resource\.resource and request\.kind\.kind are required/);
});

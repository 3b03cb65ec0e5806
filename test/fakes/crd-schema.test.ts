import t from 'tap';
import { CrdSchema, DEFAULT_CRD_DIR, goValue, loadCrds } from './crd-schema.js';

const schema = (root: Record<string, unknown>): CrdSchema => new CrdSchema(root, 'test');

t.test('goValue prints bad values as field.Error does', async (t) => {
  t.equal(goValue(null), '"null"');
  t.equal(goValue('a"b'), '"a\\"b"');
  t.equal(goValue(42), '42');
  t.equal(goValue(0.25), '0.25');
  t.equal(goValue(123456.5), '123456.5');
  t.equal(goValue(1234567.5), '1.2345675e+06');
  t.equal(goValue(10000000), '10000000', 'an integral number is an int64');
  t.equal(goValue(1e21), '1e+21', 'beyond int64, a float64');
  t.equal(goValue(0.00001), '1e-05');
  t.equal(goValue(-2.5e-7), '-2.5e-07');
  t.equal(goValue(true), 'true');
  t.equal(goValue([1, 'a', null]), '[]interface {}{1, "a", interface {}(nil)}');
  t.equal(goValue({ b: 1.5, a: { c: false } }), 'map[string]interface {}{"a":map[string]interface {}{"c":false}, "b":1.5}');
});

t.test('formats: date-time and date as strfmt checks them; int64 is not checked', async (t) => {
  const s = schema({
    type: 'object',
    properties: {
      at: { type: 'string', format: 'date-time' },
      on: { type: 'string', format: 'date' },
      id: { type: 'string', format: 'uuid4' },
      secret: { type: 'string', format: 'password' },
      n: { type: 'integer', format: 'int64' },
    },
  });
  const valid = (v: Record<string, unknown>): boolean => s.validate(v).length === 0;
  t.ok(valid({ at: '2024-02-29T23:59:59Z' }));
  t.ok(valid({ at: '2024-02-29t23:59:59.123456+01:00' }), 'lower case, fractions, offsets');
  t.notOk(valid({ at: '2023-02-29T00:00:00Z' }), 'no 29 February in 2023');
  t.notOk(valid({ at: '2024-01-01T24:00:00Z' }));
  t.notOk(valid({ at: '2024-01-01T10:00:00' }), 'a zone is needed');
  t.notOk(valid({ at: '2024' }));
  t.ok(valid({ on: '2024-12-31' }));
  t.notOk(valid({ on: '2024-13-01' }));
  t.ok(valid({ id: '0f8fad5b-d9cb-469f-a165-70867728950e' }));
  t.notOk(valid({ id: '0f8fad5b-d9cb-369f-a165-70867728950e' }), 'a version 3 uuid is no uuid4');
  t.ok(valid({ secret: 'anything', n: 2 ** 40 }));
  t.throws(() => schema({ type: 'string', format: 'hostname' }), /format hostname is not modelled/);
  t.ok(schema({ type: 'string', format: 'my-own' }), 'a format the server strips is not checked');
  t.same(
    schema({ type: 'object', properties: { at: { type: 'string', format: 'date-time' } } }).validate({ at: ['x'] }),
    [],
    'a list passes the type check of a string with a format, as in kube-openapi',
  );
});

t.test('pruning follows apiextensions-apiserver: lists without an item schema, preserve-unknown lists, root preservation', async (t) => {
  const s = schema({
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: {
          raw: { type: 'array' },
          free: { type: 'array', 'x-kubernetes-preserve-unknown-fields': true, items: { type: 'object', properties: { a: { type: 'object', properties: {} } } } },
        },
      },
    },
  });
  const obj: Record<string, unknown> = { spec: { raw: [{ x: 1 }, 2], free: [{ kept: 1, a: { dropped: 1 } }] } };
  t.same(s.prune(obj), ['spec.raw[0].x', 'spec.free[0].a.dropped']);
  t.same(obj, { spec: { raw: [{}, 2], free: [{ kept: 1, a: {} }] } });
  const open = schema({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { spec: { type: 'object', properties: {} } } });
  const o: Record<string, unknown> = { anything: 1, spec: { x: 1 } };
  t.same(open.prune(o), ['spec.x']);
  t.same(o, { anything: 1, spec: {} });
});

t.test('nulls and defaults: maps by their schema, lists through items', async (t) => {
  const s = schema({
    type: 'object',
    properties: {
      m: { type: 'object', additionalProperties: { type: 'string' } },
      l: { type: 'array', items: { type: 'object', properties: { v: { type: 'string' }, d: { type: 'string', default: 'x' } } } },
      n: { type: 'string', nullable: true },
    },
  });
  const obj: Record<string, unknown> = { m: { a: null }, l: [{ v: null }, null], n: null, unknown: null };
  s.dropNonNullableNulls(obj);
  t.same(obj, { m: {}, l: [{}, null], n: null, unknown: null }, 'list items and fields without a schema stay');
  s.applyDefaults(obj);
  t.same(obj, { m: {}, l: [{ d: 'x' }, null], n: null, unknown: null });
  t.same(
    s.validate(obj).map((e) => e.message),
    ['Invalid value: "null": l in body must be of type object: "null"'],
  );
});

t.test('bounds print as kube-openapi prints them: int64 for integral values, float64 otherwise', async (t) => {
  const s = schema({ type: 'object', properties: { n: { type: 'number', maximum: 1500000.5 } } });
  t.same(
    s.validate({ n: 2000000 }).map((e) => e.message),
    ['Invalid value: 2000000: n in body should be less than or equal to 1500000'],
  );
  t.same(
    s.validate({ n: 2000000.5 }).map((e) => e.message),
    ['Invalid value: 2.0000005e+06: n in body should be less than or equal to 1.5000005e+06'],
  );
});

t.test('kube-openapi stops early: the first failing string check; an object failing its property count is not looked into', async (t) => {
  const s = schema({
    type: 'object',
    properties: {
      name: { type: 'string', minLength: 2, maxLength: 3, pattern: '^[a-z]+$' },
      m: { type: 'object', maxProperties: 1, required: ['x'], additionalProperties: { type: 'string' } },
    },
  });
  const messages = (v: Record<string, unknown>): string[] => s.validate(v).map((e) => e.message);
  t.same(messages({ name: 'ABCD' }), ['Invalid value: "ABCD": name in body should be at most 3 chars long']);
  t.same(messages({ name: 'A' }), ['Invalid value: "A": name in body should be at least 2 chars long']);
  t.same(messages({ name: 'AB' }), ['Invalid value: "AB": name in body should match \'^[a-z]+$\'']);
  t.same(messages({ m: { a: 1, b: 2 } }), ['Invalid value: 1: m in body should have at most 1 properties']);
  t.same(messages({ m: { a: 1 } }).sort(), ['Invalid value: "integer": m.a in body must be of type string: "integer"', 'Required value'], 'within the count, the object is checked');
});

t.test('list-type map with several keys', async (t) => {
  const s = schema({
    type: 'object',
    properties: {
      ports: {
        type: 'array',
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['port', 'protocol'],
        items: { type: 'object', properties: { port: { type: 'integer' }, protocol: { type: 'string' } } },
      },
    },
  });
  t.same(
    s.validateLists({
      ports: [
        { port: 80, protocol: 'TCP' },
        { port: 80, protocol: 'UDP' },
      ],
    }),
    [],
  );
  t.same(
    s.validateLists({
      ports: [
        { port: 80, protocol: 'TCP' },
        { protocol: 'TCP', port: 80 },
      ],
    }),
    [{ field: 'ports[1]', reason: 'FieldValueDuplicate', message: 'Duplicate value: map[string]interface {}{"port":80, "protocol":"TCP"}' }],
  );
});

t.test('our CRDs load', async (t) => {
  const crds = loadCrds([DEFAULT_CRD_DIR]);
  t.same(
    crds.map((c) => `${c.kind}/${c.version}`),
    [
      'ApiDefinition/v1alpha1',
      'APIDescription/v1alpha1',
      'OperatorContext/v1alpha1',
      'PortalAPICatalogue/v1alpha1',
      'PortalConfig/v1alpha1',
      'SecurityPolicy/v1alpha1',
      'SubGraph/v1alpha1',
      'SuperGraph/v1alpha1',
      'TykOasApiDefinition/v1alpha1',
    ],
  );
  t.ok(crds.every((c) => c.namespaced && c.statusSubresource && c.source.endsWith('.yaml')));
});

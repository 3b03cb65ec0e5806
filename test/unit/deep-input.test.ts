/**
 * Input whose shape a user controls, with no recursion on its path: JSON text, canonical and
 * managed hashes and the sent-field comparison at 5,000 and 100,000 levels (built iteratively;
 * JSON.stringify itself throws RangeError there); the same text as JSON.stringify for ordinary
 * values; the depth check; the decide stage's boundary (decideContained); the first certificate
 * block of a PEM found in linear time, however many BEGIN lines it repeats; messages bounded.
 */
import t from 'tap';
import { decide, decideContained } from '../../lib/engine/decide.js';
import { canonicalJson, hashOf, managedHash, projectedJson } from '../../lib/engine/hash.js';
import { bounded, depthProblem, MAX_MESSAGE_CHARS, MAX_SPEC_DEPTH, sizeProblem, thrownProblem } from '../../lib/engine/input-limits.js';
import { certificateId, firstCertificateBlock } from '../../lib/gateway/certificates.js';
import { describeDifferences, sentFieldDifferences } from '../../lib/platform/compare.js';
import { InvalidSpecError } from '../../lib/platform/errors.js';
import { deeperThan, jsonText, renderJson } from '../../lib/platform/json-text.js';
import { apiDefinition } from '../fixtures/builders.js';
import { at, desired, loaded, quietOf } from '../fixtures/loaded.js';

/** `{"d":{"d":…leaf…}}`, `levels` deep, built in a loop. */
function deep(levels: number, leaf: unknown = 1): unknown {
  let v: unknown = leaf;
  for (let i = 0; i < levels; i++) v = i % 2 === 0 ? { d: v } : [v];
  return v;
}

for (const levels of [5_000, 100_000]) {
  t.test(`${levels} levels: text, hashes and comparisons without a RangeError`, async (t) => {
    const value = deep(levels);
    t.throws(() => JSON.stringify(value), RangeError, 'JSON.stringify cannot');
    const text = jsonText(value);
    t.equal(text.length, 6 * Math.ceil(levels / 2) + 2 * Math.floor(levels / 2) + 1, 'every level written');
    const parsed: unknown = JSON.parse(text);
    t.ok(deeperThan(parsed, levels - 1) && !deeperThan(parsed, levels), 'it parses back as deep');
    t.equal(canonicalJson(value), text, 'one key per level: canonical is the same text');
    t.match(hashOf(value), /^[0-9a-f]{32}$/);
    t.not(hashOf(value), hashOf(deep(levels, 2)), 'the leaf counts');
    t.match(managedHash(value, value), /^m:[0-9a-f]{32}$/);
    t.equal(projectedJson(value, value), text, 'projected on itself, the whole');
    t.same(sentFieldDifferences(value, value), [], 'equal to itself');
    const diffs = sentFieldDifferences(value, deep(levels, 2));
    t.equal(diffs.length, 1, 'one difference, at the leaf');
    t.equal(diffs[0]?.sent, 1);
    t.equal(diffs[0]?.reported, 2);
    t.ok(describeDifferences(diffs).length < 500, 'described in a bounded line');
    t.equal(deeperThan(value, levels), false);
    t.equal(deeperThan(value, levels - 1), true);
    t.match(depthProblem('the resource', value), `the resource is nested deeper than ${MAX_SPEC_DEPTH} levels`);
  });
}

t.test('jsonText is JSON.stringify for JSON values; renderJson sorts and projects as hash.ts did', async (t) => {
  const samples: unknown[] = [
    null,
    0,
    -1.5,
    'a "quoted"\n\u2028 text',
    true,
    [],
    {},
    [1, 'x', null, [2, [3]], { b: 1, a: [] }],
    { z: 1, a: { y: [1, 2, { c: null }], x: 'é' }, u: undefined, '': 0 },
    [undefined, 1],
  ];
  samples.forEach((v, i) => t.equal(jsonText(v), JSON.stringify(v), `as JSON.stringify: sample ${i}`));
  t.equal(renderJson({ b: 1, a: { d: 1, c: 2 } }, { sortKeys: true }), '{"a":{"c":2,"d":1},"b":1}');
  t.equal(canonicalJson(undefined), 'null');
  // projected: only what the shape names; a scalar, empty object or array of another length in the shape takes the value whole
  const echo = { a: 1, b: { c: 2, d: 3 }, e: [1, 2], f: { g: 1 }, h: [{ i: 1, j: 2 }] };
  t.equal(projectedJson(echo, { b: { c: 0 }, e: [0], f: {}, h: [{ i: 0 }], missing: 1 }), '{"b":{"c":2},"e":[1,2],"f":{"g":1},"h":[{"i":1}]}');
  t.equal(projectedJson(echo, undefined), canonicalJson(echo), 'no shape: the whole');
  t.equal(projectedJson({ a: [1] }, { a: { x: 1 } }), '{"a":[1]}', 'an array where the shape has an object: whole');
  t.equal(projectedJson({ a: { x: 1 } }, { a: [1] }), '{"a":{"x":1}}', 'an object where the shape has an array: whole');
});

t.test('deeperThan counts objects and arrays only; wide values are not deep', async (t) => {
  t.equal(deeperThan(1, 0), false);
  t.equal(deeperThan({}, 0), true);
  t.equal(deeperThan({}, 1), false);
  t.equal(deeperThan({ a: [{}] }, 2), true);
  t.equal(deeperThan({ a: [{}] }, 3), false);
  const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, { v: [i] }]));
  t.equal(deeperThan(wide, 3), false);
  t.equal(depthProblem('x', wide), undefined);
});

t.test('messages: bounded, size refusals name the limit', async (t) => {
  t.equal(bounded('short'), 'short');
  const long = bounded('x'.repeat(10_000));
  t.equal(long.length, MAX_MESSAGE_CHARS);
  t.ok(long.endsWith('\u2026'));
  const exact = 'y'.repeat(MAX_MESSAGE_CHARS);
  t.equal(bounded(exact), exact, 'a message of exactly the limit is kept whole');
  t.equal(bounded(`${exact}z`), `${'y'.repeat(MAX_MESSAGE_CHARS - 1)}\u2026`, 'one more character: cut, marked');
  t.equal(sizeProblem('a', 10, 10), undefined);
  t.equal(sizeProblem('ConfigMap default/x key oas.json', 11, 10), 'ConfigMap default/x key oas.json is 11 bytes, above the limit of 10 bytes');
  const thrown = thrownProblem('built', new RangeError(`Maximum call stack size exceeded ${'y'.repeat(5_000)}`));
  t.ok(thrown.startsWith('could not be built: Maximum call stack size exceeded'));
  t.equal(thrown.length, MAX_MESSAGE_CHARS);
});

t.test('decideContained: what decide throws for one object is that object Invalid, bounded', async (t) => {
  const l = loaded();
  t.same(decideContained(l, at()), decide(l, at()), 'the same decision when nothing throws');

  // an object whose metadata throws the first time it is read (a defect we do not know of yet)
  let reads = 0;
  const obj = apiDefinition('httpbin').withFinalizer().build();
  const metadata = obj.metadata;
  const trap = {
    ...obj,
    get metadata() {
      reads++;
      if (reads === 1) throw new TypeError(`boom ${'z'.repeat(1_000)}`);
      return metadata;
    },
  };
  const once = decideContained(loaded({ obj: trap }), at());
  t.equal(once.action, 'NOOP');
  t.equal(quietOf(once).outcome.result, 'invalid');
  t.match(quietOf(once).outcome.save, { result: 'invalid', error: /^could not be decided: boom z+/ });
  t.ok((quietOf(once).outcome.save?.error ?? '').length <= MAX_MESSAGE_CHARS, 'bounded');
  t.equal(once.what, 'quiet', 'nothing is written');

  // one that throws every time: reported invalid, nothing recorded
  const always = {
    ...obj,
    get metadata(): never {
      throw new TypeError('always');
    },
  };
  const failed = decideContained(loaded({ obj: always, desired: desired() }), at());
  t.match(failed, { action: 'NOOP', reason: 'invalid spec', patchStatus: false, what: 'quiet', outcome: { result: 'invalid', error: 'could not be decided: always', code: 'INVALID_SPEC' } });
  t.equal(quietOf(failed).outcome.save, undefined);
  t.equal(failed.gateway, 'default');
});

t.test('the first certificate block of a PEM: linear, however many BEGIN lines repeat', async (t) => {
  const line = '-----BEGIN CERTIFICATE-----\n';
  t.equal(firstCertificateBlock('no pem'), undefined);
  t.equal(firstCertificateBlock('-----BEGIN CERTIFICATE----------END CERTIFICATE-----'), undefined, 'nothing between the lines is no block');
  t.equal(firstCertificateBlock(`x${line}AAAA\n-----END CERTIFICATE-----\n${line}BBBB\n-----END CERTIFICATE-----`), `${line}AAAA\n-----END CERTIFICATE-----`, 'the first, to its END line');
  const timeOf = (bytes: number): number => {
    const text = line.repeat(Math.ceil(bytes / line.length));
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      t.throws(() => certificateId(text), InvalidSpecError);
      best = Math.min(best, performance.now() - started);
    }
    return best;
  };
  const small = timeOf(100_000);
  const large = timeOf(1_000_000);
  // the lazy regex this replaces took seconds for 200 KB, and ~100 times as long for ten times the text
  t.ok(large < 100, `1 MB of BEGIN lines in ${large.toFixed(2)} ms`);
  t.ok(large < Math.max(small, 0.05) * 40, `ten times the text, ${(large / Math.max(small, 0.05)).toFixed(1)} times the time (quadratic: 100)`);
});

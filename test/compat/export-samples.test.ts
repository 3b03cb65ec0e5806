/**
 * `gateway-reconciler export` over every Tyk Operator sample (in $TYK_REFERENCE_DIR/samples)
 * that puts something on the default gateway: each sample is reconciled in a world of its own
 * (so their listen paths do not clash), whatever ends on the Tyk Gateway fake is exported
 * through the command line's main(), and the YAML is applied to an EMPTY cluster with an EMPTY
 * store (a second world on the same gateway, with the ADOPT_NAMESPACES the export asked for).
 * Its first run adopts every object (reason `adopted from gateway`, nothing refused, nothing
 * created or deleted) with no gateway write, and leaves the gateway holding what it held (compared as Tyk reads it:
 * without Go zero values, since an empty list written back may read as null); its second run
 * makes no gateway write. The portal's samples (a Dashboard's, with no API of their own) and
 * the OperatorContext samples (other gateways) are left out.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import t from 'tap';
import { main } from '../../lib/cli/main.js';
import { withoutZeros } from '../../lib/export/translate.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { secret } from '../fixtures/builders.js';
import { PEM } from '../fixtures/pem.js';
import { worldFor } from '../harness/world.js';
import { referencePath } from './reference.js';

const ROOT = referencePath('samples');
const KINDS = new Set(['ApiDefinition', 'TykOasApiDefinition', 'SecurityPolicy', 'SubGraph', 'SuperGraph', 'Ingress']);
const CORE_KINDS = new Set(['ConfigMap', 'Secret']);
const LEFT_OUT = /^(portal|operator-context)\//;
const NS = 'imported';

/** What a sample's comments tell the user to create first (test/compat/samples.test.ts has the same). */
const PREREQUISITES: Record<string, KubeObject[]> = {
  'httpbin_upstream_cert.yaml': [secret('my-test-tls').tls(PEM.server, PEM.serverKey).build()],
  'mtls/client/httpbin_client_mtls_using_secret.yaml': [secret('my-test-tls').tls(PEM.client, PEM.clientKey).build()],
};

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.yaml') ? [p] : [];
  });
}

/** A sample: one file, or one folder under ingress/ (applied together). */
const samples = [
  ...files(ROOT)
    .reduce((units, file) => {
      const rel = relative(ROOT, file);
      if (LEFT_OUT.test(rel)) return units;
      const unit = rel.startsWith('ingress/') ? rel.slice(0, rel.lastIndexOf('/') + 1) : rel;
      units.set(unit, [...(units.get(unit) ?? []), file]);
      return units;
    }, new Map<string, string[]>())
    .entries(),
]
  .map(([unit, paths]) => {
    const all = paths.flatMap((p) => (yaml.loadAll(readFileSync(p, 'utf8')) as (KubeObject | null)[]).filter((d): d is KubeObject => !!d));
    const docs = all.filter((d) => KINDS.has(d.kind) && d.spec?.contextRef === undefined).sort((a, b) => Number(a.kind === 'Ingress') - Number(b.kind === 'Ingress'));
    return { file: unit, core: all.filter((d) => CORE_KINDS.has(d.kind)), docs };
  })
  .filter((s) => s.docs.length > 0);

t.test('there are samples to export', async (t) => {
  t.ok(samples.length >= 10, `${samples.length} samples`);
});

let exportedApis = 0;
let exportedPolicies = 0;

for (const { file, core, docs } of samples) {
  t.test(`${file}: exported, imported into an empty cluster and store, adopted as it is, then silent`, async (t) => {
    const env = { CROSS_NAMESPACE_REFS: 'allow', ADOPT_NAMESPACES: '*' };
    const w1 = await worldFor(t, { env, kube: { emptyStringIsNull: false } });
    for (const obj of [...(PREREQUISITES[file] ?? []), ...core]) await w1.create(obj);
    for (const doc of docs) {
      try {
        await w1.create({ ...doc, metadata: { ...doc.metadata, namespace: doc.metadata.namespace ?? 'default' } });
      } catch {
        // what the API server refuses never reaches the gateway (test/compat/samples.test.ts says which)
      }
    }
    await w1.tick();
    await w1.tick();
    const gateway = { api: w1.tyk.loaded('api'), policy: w1.tyk.loaded('policy'), oas: w1.tyk.loaded('oas') };
    const classic = [...gateway.api.values()].filter((a) => a.is_oas !== true).length;

    const out: string[] = [];
    const err: string[] = [];
    const code = await main(['export', '--namespace', NS], { out: (l) => out.push(l), err: (l) => err.push(l), env: { TYK_URL: w1.tyk.url, TYK_AUTH: w1.tyk.secret } });
    t.equal(code, 0, err.join(' | '));
    const objects = (loadAllYaml(out.join('\n')) as unknown[]).map((o) => JSON.parse(JSON.stringify(o)) as KubeObject);
    const count = (kind: string) => objects.filter((o) => o.kind === kind).length;
    t.equal(count('ApiDefinition'), classic, 'every Classic API the gateway holds is exported');
    t.equal(count('TykOasApiDefinition'), gateway.oas.size, 'every Tyk OAS API');
    t.equal(count('ConfigMap'), gateway.oas.size, 'each with its ConfigMap');
    t.equal(count('SecurityPolicy'), gateway.policy.size, 'every policy');
    exportedApis += classic + gateway.oas.size;
    exportedPolicies += gateway.policy.size;
    if (objects.length === 0) return;
    const notes = err.filter((l) => /^export: .+: /.test(l) && !/^export: (reading|read|wrote|the import needs) /.test(l));
    t.comment(`${objects.length} resources; notes: ${notes.length === 0 ? 'none' : notes.join(' | ')}`);
    // compared as Tyk reads them: an empty list and null (Go's nil slice) are the same to it, and the echo shows either
    const asTykReads = (m: Map<string, unknown>) => [...m].map(([id, obj]) => [id, withoutZeros(obj)]);
    const held = () => ({ api: asTykReads(w1.tyk.loaded('api')), policy: asTykReads(w1.tyk.loaded('policy')), oas: asTykReads(w1.tyk.loaded('oas')) });
    const before = structuredClone(held());

    const w2 = await worldFor(t, { env: { TYK_URL: w1.tyk.url, TYK_AUTH: w1.tyk.secret, ADOPT_NAMESPACES: NS } });
    for (const o of [...objects].sort((a, b) => Number(b.kind === 'ConfigMap') - Number(a.kind === 'ConfigMap'))) await w2.create(o);
    w1.tyk.resetCalls();
    const first = await w2.tick();
    t.same(first.errors, [], 'no run-level error');
    const ours = first.objects.filter((o) => o.namespace === NS);
    t.equal(ours.length, objects.length - count('ConfigMap'), 'every custom resource is looked at');
    for (const o of ours) t.match(o, { result: 'synced', reason: 'adopted from gateway' }, `${o.kind}/${o.name} adopted its object`);
    t.equal(w1.tyk.count('DELETE'), 0, 'nothing deleted');
    t.equal(w1.tyk.writes(), 0, 'the import’s first run makes no gateway write');
    t.same(held(), before, 'the gateway holds what it held (up to Go zero values: an empty list and null are the same to Tyk)');

    w1.tyk.resetCalls();
    const second = await w2.tick();
    t.equal(w1.tyk.writes(), 0, 'the next run makes no gateway write');
    for (const o of second.objects.filter((x) => x.namespace === NS)) t.match(o, { action: 'NOOP', reason: 'unchanged' }, `${o.kind}/${o.name} unchanged`);
  });
}

t.test('the samples put APIs and policies on the gateway, and all were exported', async (t) => {
  t.ok(exportedApis >= 10, `${exportedApis} APIs exported`);
  t.ok(exportedPolicies >= 3, `${exportedPolicies} policies exported`);
});

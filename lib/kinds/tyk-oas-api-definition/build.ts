/**
 * A TykOasApiDefinition's phase view (ManagedKind.begin): once per phase, the APIs its versions
 * name (from this run's earlier API phases, else read once: api-resolver.ts); per pass, the
 * Secrets of `clientCertificate.allowlist` and the ConfigMaps the documents live in; per object
 * the document with its id and the resource's own fields over it (payload.ts). Its uses are the
 * ConfigMap and the allowlist's Secrets and certificates, kept even when the document is refused,
 * so an event about the ConfigMap finds it. The run's policies hold its deletion and fill
 * status.linkedByPolicies.
 */
import type { Building, Built, KindPass, KindPhase, PassObject, PassReads } from '../../engine/kind.js';
import type { RunContext } from '../../engine/run-context.js';
import { CONFIG_MAP } from '../../kube/kinds.js';
import type { KubeObject } from '../../kube/types.js';
import { isObject } from '../../platform/guards.js';
import { certificatesOf, policyHolders, readSecrets, runPolicies, type SecretsRead } from '../shared/api-kind.js';
import { apiResolver, earlierApis, type ResolveApi } from '../shared/api-resolver.js';
import { configMapRefOf, oasDocumentOf, oasIdOf, oasStatusFields, tykOasPayload, versionRefsOf } from './payload.js';

/** The Secret references of a Tyk OAS API, in the form certificate-refs.ts reads: `clientCertificate.allowlist` as client certificates. */
function certificateSpecOf(obj: KubeObject): Record<string, unknown> | undefined {
  const cc = obj.spec?.clientCertificate;
  return isObject(cc) && Array.isArray(cc.allowlist) ? { client_certificate_refs: cc.allowlist } : undefined;
}

function buildOas(o: Building, resolveApi: ResolveApi, secrets: SecretsRead, configMaps: ReadonlyMap<string, KubeObject | null>): Built {
  const { obj, target } = o;
  const fallbackId = oasIdOf(undefined, obj);
  if (obj.metadata.deletionTimestamp) return { id: o.record?.id || fallbackId };
  const ref = configMapRefOf(obj);
  if ('invalid' in ref) return { id: fallbackId, invalid: ref.invalid };
  const doc = oasDocumentOf(ref, configMaps.get(`${ref.namespace}/${ref.name}`) ?? null);
  const certs = certificatesOf(o, certificateSpecOf(obj), secrets);
  const uses = [ref.use, ...(certs?.uses ?? [])];
  if (!doc.ok) return { id: fallbackId, ...('waiting' in doc ? { waiting: doc.waiting } : { invalid: doc.invalid }), uses, statusFields: oasStatusFields(obj, undefined, undefined) };
  const early = { uses, statusFields: oasStatusFields(obj, undefined, doc.contentHash) };
  const id = oasIdOf(doc.doc, obj);
  if (certs && !certs.ok) return 'waiting' in certs ? { id, waiting: certs.waiting, ...early } : { id, invalid: certs.invalid, ...early };
  const clientCertificates = certs?.fields.client_certificates;
  const payload = tykOasPayload(obj, doc.doc, id, {
    ...(Array.isArray(clientCertificates) ? { clientCertificates: clientCertificates as string[] } : {}),
    resolveVersion: (r) => resolveApi(r, target),
  });
  if (!payload.ok) return 'waiting' in payload ? { id, waiting: payload.waiting, ...early } : { id, invalid: payload.invalid, ...early };
  const done = { uses, statusFields: oasStatusFields(obj, payload.body, doc.contentHash) };
  if (certs && certs.uploads.length > 0) return { id, body: payload.body, contentHash: certs.contentHash, certificates: certs.uploads, ...done };
  return { id, body: payload.body, ...done };
}

/** The Tyk OAS API phase: the run's policies, the versions' APIs, then per pass the Secrets and ConfigMaps. */
export async function beginTykOasApis(ctx: RunContext, objects: readonly PassObject[]): Promise<KindPhase> {
  const policies = await runPolicies(ctx);
  const live = objects.flatMap((o) => (o.obj ? [o.obj] : []));
  const resolveApi = await apiResolver(
    ctx,
    live.flatMap((obj) => versionRefsOf(obj).map((v) => v.ref)),
    earlierApis(ctx),
  );
  return {
    async pass(reads: PassReads, passing: readonly PassObject[]): Promise<KindPass> {
      const secrets = await readSecrets(ctx, reads, passing, certificateSpecOf);
      const configMaps = await reads.get(CONFIG_MAP, (o) => {
        const ref = configMapRefOf(o.obj);
        return 'invalid' in ref ? [] : [ref];
      });
      return {
        build: (o) => buildOas(o, resolveApi, secrets, configMaps),
        referencedBy: (o) => policyHolders(reads, o, policies),
      };
    },
  };
}

/**
 * Which gateway a resource goes to (Tyk Operator's OperatorContext).
 *
 * A resource without `spec.contextRef` goes to the default gateway (TYK_* settings). One with
 * `contextRef {name, namespace}` (namespace defaults to the resource's) goes to the gateway
 * its OperatorContext describes: `spec.env {mode, url, auth, org, insecureSkipVerify}` and/or
 * `spec.secretRef` (a Secret with TYK_MODE, TYK_URL, TYK_AUTH, TYK_ORG,
 * TYK_TLS_INSECURE_SKIP_VERIFY); `spec.env` wins where both say something.
 *
 * Guarantees: a missing context, an unreadable Secret or an incomplete connection resolves
 * to an error naming the problem (never to the default gateway), so only the resources that
 * use it fail. Contexts and Secrets are read once per run; clients are built once per
 * distinct connection and shared (two contexts with the same connection share one client,
 * and so one reload). Targets are named "default" or "context:<namespace>/<name>"; records
 * remember the name, so a resource whose contextRef changed is found on its old gateway.
 * Secrets never appear in errors or logs.
 *
 * Boundaries (references-and-credentials): a contextRef into another namespace, and a
 * context's secretRef into another namespace, resolve only when a ReferenceGrant permits them
 * (../kube/reference-grants.ts; a Secret by name); refused, the resolution is a `refusal`
 * RefNotPermitted and the context (or Secret) is not read. A credential goes only where its
 * own source says: when the Secret gives TYK_AUTH, `spec.env` may not set the URL or turn TLS
 * verification off (a tenant cannot send a Secret's key to a host of their choosing). The URL
 * is then checked by the UrlPolicy (CONTEXT_URL_ALLOW: no userinfo, query or fragment; no
 * loopback, link-local or unspecified host unless allowed), refusal UrlNotPermitted, before
 * any connection; each context client's connections check their address again (its lookup).
 * The default gateway (TYK_URL, TYK_AUTH) is never a context's: its credential goes nowhere else.
 *
 * A context may name a Service instead of one gateway (`spec.env.service`, or
 * TYK_GATEWAY_SERVICE in its Secret: `<namespace>/<name>[:<port>]`, mode ce): the gateway is
 * then that Service's ready replicas (./replicas.ts), its URL giving only the scheme and the
 * name a replica's certificate is checked against. The Service is a reference like the others
 * (another namespace's needs a ReferenceGrant to kind Service, else RefNotPermitted), the
 * Secret's key goes to a Service only when the Secret names it (else UrlNotPermitted), and each
 * endpoint's address passes the UrlPolicy as the URL does (one refused is never reached).
 */
import { createHash } from 'node:crypto';
import { OPERATOR_CONTEXT, SECRET } from '../kube/kinds.js';
import type { ReferenceGrants, RunGrants } from '../kube/reference-grants.js';
import type { KubeApi, KubeObject } from '../kube/types.js';
import { describeError, GatewayUnavailableError } from '../platform/errors.js';
import { isObject, parseFlag, trimmed } from '../platform/guards.js';
import { type ConnectionSettings, parseConnection, type TykMode, type TykValues } from './connection.js';
import type { Replica } from './endpoint-slices.js';
import { lazyGateway } from './lazy.js';
import { type GatewayService, parseGatewayService } from './service-ref.js';
import type { Gateway } from './types.js';
import { urlShapeRefusal } from './url-allow.js';
import type { UrlPolicy } from './url-policy.js';

export interface GatewayTarget {
  name: string;
  gateway: Gateway;
  mode: TykMode;
  orgId?: string;
}

/** Why a reference or a context's URL is refused: the reason of the Failed status, condition and Event. */
export type Refusal = 'RefNotPermitted' | 'UrlNotPermitted';

export type TargetResolution = GatewayTarget | { error: string; refusal?: Refusal };

/** How a context client connects: `lookup` checks each connection's address (UrlPolicy.lookupFor); a replica's client reloads its node only and checks the certificate against `tlsServerName`. */
export interface ConnectOptions {
  lookup?: import('node:net').LookupFunction;
  reload?: 'node';
  tlsServerName?: string;
}

export type GatewayFactory = (name: string, settings: ConnectionSettings, connect?: ConnectOptions) => Gateway;

/**
 * The boundaries contexts resolve under: ReferenceGrants (CROSS_NAMESPACE_REFS), and
 * CONTEXT_URL_ALLOW's UrlPolicy (loaded on the first context resolved: a process without
 * contexts never loads it)
 */
export interface TargetSecurity {
  grants: ReferenceGrants;
  urls: () => Promise<UrlPolicy>;
}

export const DEFAULT_TARGET = 'default';

/** An OperatorContext's `spec.env` fields, and the settings they stand for (they win over its Secret's). */
const SPEC_ENV = [
  ['mode', 'TYK_MODE'],
  ['url', 'TYK_URL'],
  ['auth', 'TYK_AUTH'],
  ['org', 'TYK_ORG'],
  ['insecureSkipVerify', 'TYK_TLS_INSECURE_SKIP_VERIFY'],
] as const;

function fieldOf(setting: string): string {
  return SPEC_ENV.find(([, s]) => s === setting)?.[0] ?? setting;
}
const CONTEXT_PREFIX = 'context:';

function contextTargetName(namespace: string, name: string): string {
  return `${CONTEXT_PREFIX}${namespace}/${name}`;
}

const TYK_GROUP = 'tyk.tyk.io';

/** The contextRef of a resource as {namespace, name}, or undefined when it has none. */
function contextRefOf(obj: KubeObject): { namespace: string; name: string } | undefined {
  const ref = obj.spec?.contextRef;
  if (!isObject(ref) || trimmed(ref.name) === undefined) return undefined;
  return { namespace: trimmed(ref.namespace) ?? obj.metadata.namespace ?? '', name: trimmed(ref.name)! };
}

export class GatewayTargets {
  private readonly clients = new Map<string, Gateway>();

  constructor(
    readonly defaultTarget: GatewayTarget,
    private readonly kube: KubeApi,
    private readonly factory: GatewayFactory,
    readonly security: TargetSecurity,
  ) {}

  /** A resolver for one run: it reads each context, Secret and namespace's grants at most once. */
  forRun(): TargetResolver {
    return new TargetResolver(this, this.security.grants.forRun());
  }

  /** The shared client for these connection settings; its connections go only where `urls` permits. */
  client(name: string, settings: ConnectionSettings, urls: UrlPolicy): Gateway {
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([settings.mode, settings.url, settings.auth, settings.org, settings.insecureSkipVerify]))
      .digest('hex');
    let gw = this.clients.get(fingerprint);
    if (!gw) {
      gw = this.factory(name, settings, { lookup: urls.lookupFor(settings.url) });
      this.clients.set(fingerprint, gw);
    }
    return gw;
  }

  async readContext(namespace: string, name: string, grants: RunGrants): Promise<TargetResolution> {
    const where = `OperatorContext ${namespace}/${name}`;
    let ctx: KubeObject | null;
    try {
      ctx = await this.kube.get(OPERATOR_CONTEXT, namespace, name);
    } catch (err) {
      return { error: `${where} could not be read: ${describeError(err)}` };
    }
    if (ctx === null) return { error: `${where} not found` };
    const env = isObject(ctx.spec?.env) ? ctx.spec.env : {};
    let fromSecret: Record<string, string> = {};
    const secretRef = isObject(ctx.spec?.secretRef) ? ctx.spec.secretRef : undefined;
    if (secretRef) {
      const secretName = trimmed(secretRef.name);
      const secretNs = trimmed(secretRef.namespace) ?? namespace;
      if (!secretName) return { error: `${where}: secretRef.name is empty` };
      const granted = await grants.check('spec.secretRef', { group: TYK_GROUP, kind: OPERATOR_CONTEXT.kind, namespace }, { group: '', kind: SECRET.kind, namespace: secretNs, name: secretName });
      if (!granted.ok) return 'refused' in granted ? { error: `${where}: ${granted.refused}`, refusal: 'RefNotPermitted' } : { error: `${where}: ${granted.error}` };
      try {
        const secret = await this.kube.get(SECRET, secretNs, secretName);
        if (secret === null) return { error: `${where}: Secret ${secretNs}/${secretName} not found` };
        fromSecret = decodeSecret(secret);
      } catch (err) {
        return { error: `${where}: Secret ${secretNs}/${secretName} could not be read: ${describeError(err)}` };
      }
    }
    const values: TykValues = { ...fromSecret };
    const given: TykValues = {};
    for (const [field, setting] of SPEC_ENV) {
      const v = typeof env[field] === 'boolean' ? env[field] : trimmed(env[field]);
      if (v !== undefined) given[setting] = v;
    }
    // the Secret's key goes only to the Secret's URL, checked as the Secret says
    const secretKey = fromSecret.TYK_AUTH !== undefined && given.TYK_AUTH === undefined;
    if (secretKey && given.TYK_URL !== undefined && given.TYK_URL !== trimmed(fromSecret.TYK_URL)) {
      return { error: `${where}: spec.env.url may not send the TYK_AUTH of its Secret elsewhere: set TYK_URL in the Secret, or give spec.env.auth too`, refusal: 'UrlNotPermitted' };
    }
    if (secretKey && given.TYK_TLS_INSECURE_SKIP_VERIFY !== undefined && parseFlag(given.TYK_TLS_INSECURE_SKIP_VERIFY) !== parseFlag(fromSecret.TYK_TLS_INSECURE_SKIP_VERIFY ?? 'false')) {
      return { error: `${where}: spec.env.insecureSkipVerify may not change how the TYK_AUTH of its Secret is sent: set TYK_TLS_INSECURE_SKIP_VERIFY in the Secret`, refusal: 'UrlNotPermitted' };
    }
    Object.assign(values, given);
    // userinfo, a query or a fragment: refused as a URL, before it is parsed as a setting
    const rawUrl = trimmed(values.TYK_URL);
    const shape = rawUrl === undefined || !URL.canParse(rawUrl) ? undefined : urlShapeRefusal(rawUrl);
    if (shape !== undefined) return { error: `${where}: spec.env.url (or TYK_URL in its Secret) ${shape}; no connection was made`, refusal: 'UrlNotPermitted' };
    const { settings, problems } = parseConnection(values);
    const [problem] = problems;
    if (problem) return { error: `${where}: spec.env.${fieldOf(problem.setting)} (or ${problem.setting} in its Secret) ${problem.message}` };
    const urls = await this.security.urls();
    const refused = await urls.refusal(settings.url);
    if (refused !== undefined) return { error: `${where}: spec.env.url (or TYK_URL in its Secret) ${refused}; no connection was made`, refusal: 'UrlNotPermitted' };
    const { mode, org } = settings;
    const targetName = contextTargetName(namespace, name);
    const orgId = org ? { orgId: org } : {};
    // a Service: the gateway is its ready endpoints (mode ce), the Secret's key going only where the Secret says
    const serviceGiven = trimmed(env.service);
    if (secretKey && serviceGiven !== undefined && serviceGiven !== trimmed(fromSecret.TYK_GATEWAY_SERVICE)) {
      return { error: `${where}: spec.env.service may not send the TYK_AUTH of its Secret elsewhere: set TYK_GATEWAY_SERVICE in the Secret, or give spec.env.auth too`, refusal: 'UrlNotPermitted' };
    }
    const serviceText = serviceGiven ?? trimmed(fromSecret.TYK_GATEWAY_SERVICE);
    if (serviceText === undefined) return { name: targetName, gateway: this.client(targetName, settings, urls), mode, ...orgId };
    const field = 'spec.env.service (or TYK_GATEWAY_SERVICE in its Secret)';
    if (mode !== 'ce') return { error: `${where}: ${field} applies to mode ce only (the Tyk Dashboard keeps its APIs itself)` };
    const service = parseGatewayService(serviceText);
    if (typeof service === 'string') return { error: `${where}: ${field} ${service}` };
    if (service.namespace !== namespace) {
      const granted = await grants.check(
        'spec.env.service',
        { group: TYK_GROUP, kind: OPERATOR_CONTEXT.kind, namespace },
        { group: '', kind: 'Service', namespace: service.namespace, name: service.name },
      );
      if (!granted.ok) return 'refused' in granted ? { error: `${where}: ${granted.refused}`, refusal: 'RefNotPermitted' } : { error: `${where}: ${granted.error}` };
    }
    return { name: targetName, gateway: this.replicas(targetName, settings, service, urls), mode, ...orgId };
  }

  /**
   * The shared gateway of a Service's replicas for these connection settings: its ready
   * endpoints (endpoint-slices.ts), each address checked by `urls` as a context's URL is (an
   * address refused is left out; all refused, the discovery fails naming them), each reached
   * with the context's key, its node reloaded alone, over https its certificate checked
   * against the host of the context's URL.
   */
  private replicas(name: string, settings: ConnectionSettings, service: GatewayService, urls: UrlPolicy): Gateway {
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([settings.mode, settings.url, settings.auth, settings.org, settings.insecureSkipVerify, service.namespace, service.name, service.port ?? null]))
      .digest('hex');
    let gw = this.clients.get(fingerprint);
    if (gw) return gw;
    gw = lazyGateway(
      name,
      true,
      async () => {
        const [{ EndpointSliceDiscovery }, { ReplicaGateway }] = await Promise.all([import('./endpoint-slices.js'), import('./replicas.js')]);
        return new ReplicaGateway(name, this.replicaDiscovery(name, service, urls, new EndpointSliceDiscovery(this.kube, service, schemeOf(settings))), (r) =>
          this.replicaClient(name, settings, urls, r),
        );
      },
      { replicas: true },
    );
    this.clients.set(fingerprint, gw);
    return gw;
  }

  /** The replicas of `service` whose addresses `urls` permits; all refused: an error naming them. */
  private replicaDiscovery(name: string, service: GatewayService, urls: UrlPolicy, discovery: { discover(): Promise<Replica[]> }): () => Promise<Replica[]> {
    return async () => {
      const found = await discovery.discover();
      const permitted: Replica[] = [];
      const refused: string[] = [];
      for (const r of found) {
        const why = await urls.refusal(r.url);
        if (why === undefined) permitted.push(r);
        else refused.push(`${r.name} ${why}`);
      }
      if (permitted.length === 0 && refused.length > 0) throw new GatewayUnavailableError(`${name}: no endpoint of Service ${service.namespace}/${service.name} may be reached: ${refused.join('; ')}`);
      return permitted;
    };
  }

  /** One replica's client: the context's key, its node reloaded alone, over https its certificate checked against the context URL's host. */
  private replicaClient(name: string, settings: ConnectionSettings, urls: UrlPolicy, r: Replica): Gateway {
    const https = schemeOf(settings) === 'https';
    return this.factory(`${name}/${r.name}`, { ...settings, url: r.url }, { lookup: urls.lookupFor(r.url), reload: 'node', ...(https ? { tlsServerName: new URL(settings.url).hostname } : {}) });
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.clients.values()].map((c) => (c as { close?: () => Promise<void> }).close?.()));
  }
}

function schemeOf(settings: ConnectionSettings): 'http' | 'https' {
  return new URL(settings.url).protocol === 'https:' ? 'https' : 'http';
}

function decodeSecret(secret: KubeObject): Record<string, string> {
  const out: Record<string, string> = {};
  const data = isObject(secret.data) ? secret.data : {};
  for (const [k, v] of Object.entries(data)) if (typeof v === 'string') out[k] = Buffer.from(v, 'base64').toString('utf8').trim();
  const plain = isObject(secret.stringData) ? secret.stringData : {};
  for (const [k, v] of Object.entries(plain)) if (typeof v === 'string') out[k] = v.trim();
  return out;
}

export class TargetResolver {
  private readonly contexts = new Map<string, Promise<TargetResolution>>();

  constructor(
    private readonly targets: GatewayTargets,
    /** this run's ReferenceGrants: each namespace's read at most once */
    readonly grants: RunGrants,
  ) {}

  /** The gateway the resource goes to now; a contextRef into another namespace needs a ReferenceGrant. */
  async forObject(obj: KubeObject): Promise<TargetResolution> {
    const ref = contextRefOf(obj);
    if (!ref) return this.targets.defaultTarget;
    const from = { group: obj.apiVersion.includes('/') ? (obj.apiVersion.split('/')[0] as string) : '', kind: obj.kind, namespace: obj.metadata.namespace ?? '' };
    const granted = await this.grants.check('spec.contextRef', from, { group: TYK_GROUP, kind: OPERATOR_CONTEXT.kind, namespace: ref.namespace, name: ref.name });
    if (!granted.ok) return 'refused' in granted ? { error: granted.refused, refusal: 'RefNotPermitted' } : { error: granted.error };
    return this.byName(contextTargetName(ref.namespace, ref.name));
  }

  /** A target by the name a record remembers. */
  byName(name: string | undefined): Promise<TargetResolution> {
    if (name === undefined || name === DEFAULT_TARGET) return Promise.resolve(this.targets.defaultTarget);
    let pending = this.contexts.get(name);
    if (!pending) {
      const m = /^context:([^/]+)\/(.+)$/.exec(name);
      pending = m ? this.targets.readContext(m[1]!, m[2]!, this.grants) : Promise.resolve({ error: `unknown gateway "${name}"` });
      this.contexts.set(name, pending);
    }
    return pending;
  }
}

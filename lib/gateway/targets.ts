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
 */
import { createHash } from 'node:crypto';
import { describeError } from '../errors.js';
import { isObject, trimmed } from '../guards.js';
import { OPERATOR_CONTEXT, SECRET } from '../kinds.js';
import type { KubeApi, KubeObject } from '../kube/types.js';
import { type ConnectionSettings, parseConnection, type TykMode, type TykValues } from './connection.js';
import type { Gateway } from './types.js';

export interface GatewayTarget {
  name: string;
  gateway: Gateway;
  mode: TykMode;
  orgId?: string;
}

export type TargetResolution = GatewayTarget | { error: string };

export type GatewayFactory = (name: string, settings: ConnectionSettings) => Gateway;

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
  ) {}

  /** A resolver for one run: it reads each context and Secret at most once. */
  forRun(): TargetResolver {
    return new TargetResolver(this);
  }

  /** The shared client for these connection settings. */
  client(name: string, settings: ConnectionSettings): Gateway {
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([settings.mode, settings.url, settings.auth, settings.org, settings.insecureSkipVerify]))
      .digest('hex');
    let gw = this.clients.get(fingerprint);
    if (!gw) {
      gw = this.factory(name, settings);
      this.clients.set(fingerprint, gw);
    }
    return gw;
  }

  async readContrimmed(namespace: string, name: string): Promise<TargetResolution> {
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
      try {
        const secret = await this.kube.get(SECRET, secretNs, secretName);
        if (secret === null) return { error: `${where}: Secret ${secretNs}/${secretName} not found` };
        fromSecret = decodeSecret(secret);
      } catch (err) {
        return { error: `${where}: Secret ${secretNs}/${secretName} could not be read: ${describeError(err)}` };
      }
    }
    const values: TykValues = { ...fromSecret };
    for (const [field, setting] of SPEC_ENV) {
      const given = typeof env[field] === 'boolean' ? env[field] : trimmed(env[field]);
      if (given !== undefined) values[setting] = given;
    }
    const { settings, problems } = parseConnection(values);
    const [problem] = problems;
    if (problem) return { error: `${where}: spec.env.${fieldOf(problem.setting)} (or ${problem.setting} in its Secret) ${problem.message}` };
    const { mode, org } = settings;
    const targetName = contextTargetName(namespace, name);
    return { name: targetName, gateway: this.client(targetName, settings), mode, ...(org ? { orgId: org } : {}) };
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.clients.values()].map((c) => (c as { close?: () => Promise<void> }).close?.()));
  }
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

  constructor(private readonly targets: GatewayTargets) {}

  /** The gateway the resource goes to now. */
  forObject(obj: KubeObject): Promise<TargetResolution> {
    const ref = contextRefOf(obj);
    if (!ref) return Promise.resolve(this.targets.defaultTarget);
    return this.byName(contextTargetName(ref.namespace, ref.name));
  }

  /** A target by the name a record remembers. */
  byName(name: string | undefined): Promise<TargetResolution> {
    if (name === undefined || name === DEFAULT_TARGET) return Promise.resolve(this.targets.defaultTarget);
    let pending = this.contexts.get(name);
    if (!pending) {
      const m = /^context:([^/]+)\/(.+)$/.exec(name);
      pending = m ? this.targets.readContrimmed(m[1]!, m[2]!) : Promise.resolve({ error: `unknown gateway "${name}"` });
      this.contexts.set(name, pending);
    }
    return pending;
  }
}

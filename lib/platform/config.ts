/**
 * Environment → typed, validated configuration.
 *
 * Guarantees: `loadConfig` either returns a complete Config or throws one ConfigError listing
 * every bad setting, one line each, naming the setting; secrets (TYK_AUTH, tokens, the Redis
 * password) never appear in those lines. Pure: reads only the `env` object it is given.
 * The names are Tyk Operator's and the design's (shared/design.md, "Interface"); they are a
 * public contract.
 */
// the named export alone: a bundle (scripts/bundle.ts) keeps the validator and drops the scheduler
import { validate as validCron } from 'node-cron';
import { type ConnectionSettings, parseConnection } from '../gateway/connection.js';
import { type GatewayService, parseGatewayService } from '../gateway/service-ref.js';
import { type AllowEntry, parseUrlAllow } from '../gateway/url-allow.js';
import type { CrossNamespaceRefs } from '../kube/reference-grants.js';
import { redisUrlProblem } from '../store/redis-url.js';
import { ConfigError } from './errors.js';
import { parseFlag, trimmed } from './guards.js';

export interface Config {
  kubeconfigPath?: string;
  /**
   * the default gateway (TYK_*); `service` (TYK_GATEWAY_SERVICE, TYK_MODE=ce only): its replicas
   * are the ready endpoints of this Service (lib/gateway/endpoint-slices.ts)
   */
  tyk: ConnectionSettings & { service?: GatewayService };
  /** undefined: all namespaces */
  watchNamespaces?: string[];
  /**
   * REDIS_URL as given: one Redis URL, or with REDIS_CLUSTER=true the seed URLs of a Redis Cluster
   * (comma-separated); lib/store/redis-url.ts reads it
   */
  redisUrl?: string;
  /** REDIS_CLUSTER=true: REDIS_URL names a Redis Cluster (ElastiCache cluster mode, self-managed) */
  redisCluster: boolean;
  webhookTokens: string[];
  resyncTokens: string[];
  /** METRICS_TOKEN: when set, GET /metrics needs one of these; empty: open, like the probes */
  metricsTokens: string[];
  /**
   * POST /admission: open by default (it writes nothing, and its answers say nothing of objects
   * the requester could not read); ADMISSION_TOKEN requires a bearer token, and
   * ADMISSION_CLIENT_CERT=true a client certificate TLS_CLIENT_CA verifies
   */
  admission: { tokens: string[]; clientCert: boolean };
  allowUnauthenticated: boolean;
  /** cron expression; undefined when RESYNC_SCHEDULE=off (the schedule comes from outside) */
  resyncSchedule?: string;
  port: number;
  host: string;
  logLevel: string;
  /** HTTP_TIMEOUT_MS: the deadline of every call to the API server and the gateway, the whole exchange */
  httpTimeoutMs: number;
  /**
   * HTTP_CLIENT: the HTTP client of full runs (the self-hosted server, the schedule and shard
   * functions): `node` (Node's own http/https, the default) or `undici` (undici's pooled client);
   * the webhook functions always use Node's
   */
  httpClient: 'node' | 'undici';
  /** GATEWAY_MAX_RESPONSE_BYTES: the most bytes of a gateway's answer read; a longer one is refused */
  gatewayMaxResponseBytes: number;
  webhook: {
    /** largest accepted body, bytes */
    bodyLimit: number;
    /** requests per minute per source on the webhook routes; 0 turns the limit off */
    rateLimitPerMinute: number;
    /** distinct objects one request may name before they are folded into namespace-wide or full runs */
    maxRefs: number;
    /**
     * WEBHOOK_ANSWER: `accepted` (the default), answer 202 once the objects are taken, the run
     * following in this process, coalesced with the others asked meanwhile; or `report`, answer
     * 200 once the delivery's own run is done, with its report (AWS Lambda: always)
     */
    answer: 'report' | 'accepted';
  };
  /**
   * ADOPT_NAMESPACES: namespaces whose resources may adopt a gateway object no resource owns
   * under an id other than their default one; ['*']: every namespace (Tyk Operator's
   * behaviour, for a migration); empty: none
   */
  adoptNamespaces: string[];
  /** MAX_DELETES_PER_RUN: a run that would delete more gateway objects deletes none; 0: no limit */
  maxDeletesPerRun: number;
  /** GATEWAY_MAX_CONCURRENT_WRITES: writes in flight toward one gateway from all invocations together; 0: no limit */
  gatewayMaxConcurrentWrites: number;
  /** SHUTDOWN_GRACE_MS: after SIGTERM, how long runs in flight get to settle, record and release */
  shutdownGraceMs: number;
  /** our own identity in audit events; undefined: learned from the API server */
  reconcilerUsername?: string;
  /**
   * Ingresses: INGRESS_CLASS (Tyk Operator's WATCH_INGRESS_CLASS is read when it is unset), and
   * Tyk Operator's TYK_HTTP_INGRESS_PORT / TYK_HTTPS_INGRESS_PORT, the listen_port of the
   * ApiDefinitions generated for plain and TLS hosts (0: the template's)
   */
  ingress: { className: string; httpPort: number; httpsPort: number };
  /**
   * Gateway API: GATEWAY_CONTROLLER_NAME, the GatewayClass `controllerName` we serve (default
   * tyk.io/gateway-reconciler); GATEWAY_ADDRESSES, the gateway's public addresses (IPs or
   * hostnames, comma-separated) our Gateways' status shows; GATEWAY_HTTP_PORT / GATEWAY_HTTPS_PORT,
   * the Tyk port (listen_port) routes of HTTP and HTTPS listeners are served on (0: Tyk's own)
   */
  gatewayApi: { controllerName: string; addresses: string[]; httpPort: number; httpsPort: number };
  /**
   * Full runs over more objects than SHARD_SIZE are sharded (lib/triggers/schedule.ts): sent as
   * messages to SHARD_QUEUE_URL (an SQS queue; serverless.yml sets it on Lambda), or, without
   * one, run one after another in this process
   */
  shards: { size: number; queueUrl?: string };
  /** self-hosted HTTPS: paths of the PEM files */
  tls?: { certFile: string; keyFile: string; clientCaFile?: string };
  /**
   * Namespaces as boundaries: CROSS_NAMESPACE_REFS, `grant` (a reference into another namespace
   * needs a ReferenceGrant there) or `allow` (Tyk Operator's behaviour); CONTEXT_URL_ALLOW, the
   * hosts, host:ports and CIDRs an OperatorContext's URL may name (undefined: not set)
   */
  boundaries: { crossNamespaceRefs: CrossNamespaceRefs; contextUrlAllow?: AllowEntry[] };
}

export const DEFAULT_SCHEDULE = '*/5 * * * *';
/**
 * A list of 50,000 APIs: Tyk echoes ~7.5 KB per API definition (~375 MB), plus a quarter; below
 * V8's longest string (512 MiB), so an answer read as one text fits too.
 */
export const DEFAULT_GATEWAY_MAX_RESPONSE_BYTES = 448 * 1024 * 1024;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

type Env = Record<string, string | undefined>;

class Problems {
  readonly list: { setting: string; message: string }[] = [];
  add(setting: string, message: string): undefined {
    this.list.push({ setting, message });
    return undefined;
  }
}

function value(env: Env, name: string): string | undefined {
  return trimmed(env[name]);
}

function bool(env: Env, name: string, problems: Problems): boolean {
  const v = parseFlag(env[name]);
  if (v === null) problems.add(name, `must be true or false, got "${value(env, name)?.toLowerCase()}"`);
  return v ?? false;
}

function list(env: Env, name: string): string[] {
  return (value(env, name) ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function namespaces(env: Env, problems: Problems): string[] | undefined {
  const names = list(env, 'WATCH_NAMESPACE');
  if (names.length === 0) return undefined;
  const bad = names.find((n) => !DNS_LABEL.test(n));
  if (bad !== undefined) problems.add('WATCH_NAMESPACE', `"${bad}" is not a valid namespace name`);
  return [...new Set(names)];
}

/** ADOPT_NAMESPACES: namespace names, or `*` alone for all. */
function adoptNamespaces(env: Env, problems: Problems): string[] {
  const names = list(env, 'ADOPT_NAMESPACES');
  if (names.includes('*')) {
    if (names.length > 1) problems.add('ADOPT_NAMESPACES', 'is either * (every namespace) or a list of namespace names, not both');
    return ['*'];
  }
  const bad = names.find((n) => !DNS_LABEL.test(n));
  if (bad !== undefined) problems.add('ADOPT_NAMESPACES', `"${bad}" is not a valid namespace name (or * for every namespace)`);
  return [...new Set(names)];
}

/** REDIS_URL and REDIS_CLUSTER together: a URL, or a cluster's seed URLs. */
function redis(env: Env, problems: Problems): Pick<Config, 'redisUrl' | 'redisCluster'> {
  const cluster = bool(env, 'REDIS_CLUSTER', problems);
  const v = value(env, 'REDIS_URL');
  if (v === undefined) {
    if (cluster) problems.add('REDIS_CLUSTER', "is true but REDIS_URL is not set (the cluster's configuration endpoint or seed nodes)");
    return { redisCluster: cluster };
  }
  const problem = redisUrlProblem(v, cluster);
  if (problem !== undefined) problems.add('REDIS_URL', problem);
  return { redisUrl: problem === undefined ? v : undefined, redisCluster: cluster };
}

function port(env: Env, problems: Problems): number {
  const v = value(env, 'PORT');
  if (v === undefined) return 8080;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) problems.add('PORT', `must be a port number from 0 to 65535, got "${v}"`);
  return n;
}

function httpClient(env: Env, problems: Problems): Config['httpClient'] {
  const client = (value(env, 'HTTP_CLIENT') ?? 'node').toLowerCase();
  if (client === 'node' || client === 'undici') return client;
  problems.add('HTTP_CLIENT', `must be node or undici, got "${client}"`);
  return 'node';
}

function timeoutMs(env: Env, problems: Problems): number {
  const v = value(env, 'HTTP_TIMEOUT_MS');
  if (v === undefined) return 10_000;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 100 || n > 120_000) problems.add('HTTP_TIMEOUT_MS', `must be milliseconds from 100 to 120000, got "${v}"`);
  return n;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number, problems: Problems): number {
  const v = value(env, name);
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) problems.add(name, `must be a whole number from ${min} to ${max}, got "${v}"`);
  return n;
}

function tls(env: Env, problems: Problems): Config['tls'] {
  const certFile = value(env, 'TLS_CERT');
  const keyFile = value(env, 'TLS_KEY');
  const clientCaFile = value(env, 'TLS_CLIENT_CA');
  if (certFile === undefined && keyFile === undefined) {
    if (clientCaFile !== undefined) problems.add('TLS_CLIENT_CA', 'needs TLS_CERT and TLS_KEY (client certificates are checked over HTTPS only)');
    return undefined;
  }
  if (certFile === undefined) return problems.add('TLS_CERT', 'is required when TLS_KEY is set');
  if (keyFile === undefined) return problems.add('TLS_KEY', 'is required when TLS_CERT is set');
  return clientCaFile === undefined ? { certFile, keyFile } : { certFile, keyFile, clientCaFile };
}

/** An IngressClass name or a `kubernetes.io/ingress.class` value: letters, digits, '-', '_', '.', '/'. */
const INGRESS_CLASS_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_./]{0,251}[A-Za-z0-9])?$/;

function ingress(env: Env, problems: Problems): Config['ingress'] {
  const setting = value(env, 'INGRESS_CLASS') === undefined && value(env, 'WATCH_INGRESS_CLASS') !== undefined ? 'WATCH_INGRESS_CLASS' : 'INGRESS_CLASS';
  const className = value(env, 'INGRESS_CLASS') ?? value(env, 'WATCH_INGRESS_CLASS') ?? 'tyk';
  if (!INGRESS_CLASS_NAME.test(className)) problems.add(setting, `must be an ingress class name (letters, digits, '-', '_', '.', '/'; at most 253), got "${className}"`);
  return {
    className,
    httpPort: integer(env, 'TYK_HTTP_INGRESS_PORT', 0, 0, 65535, problems),
    httpsPort: integer(env, 'TYK_HTTPS_INGRESS_PORT', 8443, 1, 65535, problems),
  };
}

/** A GatewayClass controllerName: a domain prefix, a slash, a path (Gateway API's own pattern). */
const CONTROLLER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$/;
/** An address as Gateway API's status takes it: an IPv4 or IPv6 address, or a DNS name. */
const ADDRESS = /^(?:[0-9a-fA-F:.]+|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$/;

function gatewayApi(env: Env, problems: Problems): Config['gatewayApi'] {
  const controllerName = value(env, 'GATEWAY_CONTROLLER_NAME') ?? 'tyk.io/gateway-reconciler';
  if (controllerName.length > 253 || !CONTROLLER_NAME.test(controllerName)) {
    problems.add('GATEWAY_CONTROLLER_NAME', `must be a domain-prefixed path such as example.com/gateway (at most 253 characters), got "${controllerName}"`);
  }
  const addresses = list(env, 'GATEWAY_ADDRESSES');
  const bad = addresses.find((a) => a.length > 253 || !ADDRESS.test(a));
  if (bad !== undefined) problems.add('GATEWAY_ADDRESSES', `"${bad}" is not an IP address or a hostname`);
  return {
    controllerName,
    addresses,
    httpPort: integer(env, 'GATEWAY_HTTP_PORT', 0, 0, 65535, problems),
    httpsPort: integer(env, 'GATEWAY_HTTPS_PORT', 8443, 0, 65535, problems),
  };
}

/**
 * SHARD_QUEUE_URL: an SQS queue URL, https://sqs.<region>.amazonaws.com/<account>/<queue> (http
 * is accepted for a local stand-in). The value is not echoed: a URL may carry credentials.
 */
function shardQueueUrl(env: Env, problems: Problems): string | undefined {
  const v = value(env, 'SHARD_QUEUE_URL');
  if (v === undefined) return undefined;
  const want = 'must be an SQS queue URL, https://sqs.<region>.amazonaws.com/<account>/<queue>';
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return problems.add('SHARD_QUEUE_URL', `${want}; it is not a URL`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return problems.add('SHARD_QUEUE_URL', `${want}, got "${u.protocol}//"`);
  if (u.username !== '' || u.password !== '') return problems.add('SHARD_QUEUE_URL', `${want}, without credentials in it`);
  if (!/^\/[^/]+\/[^/]+\/?$/.test(u.pathname)) return problems.add('SHARD_QUEUE_URL', `${want}; its path must be /<account>/<queue>`);
  return v;
}

function webhookAnswer(env: Env, problems: Problems): Config['webhook']['answer'] {
  const answer = (value(env, 'WEBHOOK_ANSWER') ?? 'accepted').toLowerCase();
  if (answer === 'report' || answer === 'accepted') return answer;
  problems.add('WEBHOOK_ANSWER', `must be report or accepted, got "${answer}"`);
  return 'report';
}

function boundaries(env: Env, problems: Problems): Config['boundaries'] {
  const refs = (value(env, 'CROSS_NAMESPACE_REFS') ?? 'grant').toLowerCase();
  if (refs !== 'grant' && refs !== 'allow') problems.add('CROSS_NAMESPACE_REFS', `must be grant or allow, got "${refs}"`);
  const allow = parseUrlAllow(value(env, 'CONTEXT_URL_ALLOW'));
  if (allow.problems.length > 0) problems.add('CONTEXT_URL_ALLOW', `${allow.problems.join('; ')} (entries: host, host:port or CIDR, comma-separated)`);
  return { crossNamespaceRefs: refs === 'allow' ? 'allow' : 'grant', ...(allow.entries ? { contextUrlAllow: allow.entries } : {}) };
}

/**
 * TYK_GATEWAY_SERVICE: `<namespace>/<name>[:<port>]` (lib/gateway/endpoint-slices.ts
 * parseGatewayService); only with TYK_MODE=ce (a Dashboard keeps its APIs itself).
 */
function gatewayService(env: Env, mode: ConnectionSettings['mode'], problems: Problems): GatewayService | undefined {
  const v = value(env, 'TYK_GATEWAY_SERVICE');
  if (v === undefined) return undefined;
  const name = 'TYK_GATEWAY_SERVICE';
  if (mode === 'pro') return problems.add(name, 'applies to TYK_MODE=ce only (the Tyk Dashboard keeps its APIs itself, for every gateway)');
  const parsed = parseGatewayService(v);
  return typeof parsed === 'string' ? problems.add(name, parsed) : parsed;
}

function tokens(env: Env, name: string, problems: Problems): string[] {
  const t = list(env, name);
  if (t.some((x) => x.length < 16)) problems.add(name, 'each token must be at least 16 characters');
  return t;
}

function withService(settings: ConnectionSettings, service: GatewayService | undefined): Config['tyk'] {
  return service === undefined ? settings : { ...settings, service };
}

/** What a reader of the settings serves: `serving: false` (the command line) takes no requests, so it needs no WEBHOOK_TOKEN or RESYNC_TOKEN. */
export interface LoadOptions {
  serving?: boolean;
}

export function loadConfig(env: Env, options: LoadOptions = {}): Config {
  const problems = new Problems();
  const tyk = parseConnection({
    TYK_MODE: value(env, 'TYK_MODE'),
    TYK_URL: value(env, 'TYK_URL'),
    TYK_AUTH: value(env, 'TYK_AUTH'),
    TYK_ORG: value(env, 'TYK_ORG'),
    TYK_TLS_INSECURE_SKIP_VERIFY: value(env, 'TYK_TLS_INSECURE_SKIP_VERIFY'),
  });
  for (const p of tyk.problems) problems.add(p.setting, p.message);
  const webhookTokens = tokens(env, 'WEBHOOK_TOKEN', problems);
  const resyncTokens = tokens(env, 'RESYNC_TOKEN', problems);
  const metricsTokens = tokens(env, 'METRICS_TOKEN', problems);
  const admissionClientCert = bool(env, 'ADMISSION_CLIENT_CERT', problems);
  if (admissionClientCert && value(env, 'TLS_CLIENT_CA') === undefined) problems.add('ADMISSION_CLIENT_CERT', 'needs TLS_CLIENT_CA (the CA that signs the API server’s client certificate)');
  const allowUnauthenticated = bool(env, 'ALLOW_UNAUTHENTICATED', problems);
  if (!allowUnauthenticated && options.serving !== false) {
    if (webhookTokens.length === 0) problems.add('WEBHOOK_TOKEN', 'is required (or set ALLOW_UNAUTHENTICATED=true to run without authentication)');
    if (resyncTokens.length === 0) problems.add('RESYNC_TOKEN', 'is required (or set ALLOW_UNAUTHENTICATED=true to run without authentication)');
  }
  const scheduleSetting = value(env, 'RESYNC_SCHEDULE') ?? DEFAULT_SCHEDULE;
  const resyncSchedule = scheduleSetting.toLowerCase() === 'off' ? undefined : scheduleSetting;
  if (resyncSchedule !== undefined && !validCron(resyncSchedule)) problems.add('RESYNC_SCHEDULE', `"${resyncSchedule}" is not a valid cron expression (or "off")`);
  const logLevel = (value(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) problems.add('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  const config: Config = {
    kubeconfigPath: value(env, 'KUBECONFIG'),
    tyk: withService(tyk.settings, gatewayService(env, tyk.settings.mode, problems)),
    watchNamespaces: namespaces(env, problems),
    ...redis(env, problems),
    webhookTokens,
    resyncTokens,
    metricsTokens,
    admission: { tokens: tokens(env, 'ADMISSION_TOKEN', problems), clientCert: admissionClientCert },
    allowUnauthenticated,
    ...(resyncSchedule !== undefined ? { resyncSchedule } : {}),
    port: port(env, problems),
    host: value(env, 'HOST') ?? '0.0.0.0',
    logLevel,
    httpTimeoutMs: timeoutMs(env, problems),
    httpClient: httpClient(env, problems),
    gatewayMaxResponseBytes: integer(env, 'GATEWAY_MAX_RESPONSE_BYTES', DEFAULT_GATEWAY_MAX_RESPONSE_BYTES, 64 * 1024, 4 * 1024 * 1024 * 1024, problems),
    webhook: {
      bodyLimit: integer(env, 'WEBHOOK_BODY_LIMIT', 32 * 1024 * 1024, 1024, 1024 * 1024 * 1024, problems),
      rateLimitPerMinute: integer(env, 'WEBHOOK_RATE_LIMIT', 600, 0, 1_000_000, problems),
      maxRefs: integer(env, 'WEBHOOK_MAX_REFS', 500, 1, 100_000, problems),
      answer: webhookAnswer(env, problems),
    },
    adoptNamespaces: adoptNamespaces(env, problems),
    maxDeletesPerRun: integer(env, 'MAX_DELETES_PER_RUN', 50, 0, 1_000_000, problems),
    gatewayMaxConcurrentWrites: integer(env, 'GATEWAY_MAX_CONCURRENT_WRITES', 16, 0, 10_000, problems),
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 25_000, 0, 600_000, problems),
    reconcilerUsername: value(env, 'RECONCILER_USERNAME'),
    ingress: ingress(env, problems),
    gatewayApi: gatewayApi(env, problems),
    shards: { size: integer(env, 'SHARD_SIZE', 2000, 1, 1_000_000, problems), queueUrl: shardQueueUrl(env, problems) },
    tls: tls(env, problems),
    boundaries: boundaries(env, problems),
  };
  if (problems.list.length > 0) throw new ConfigError(problems.list);
  return config;
}

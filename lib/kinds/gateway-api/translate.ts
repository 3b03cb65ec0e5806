/**
 * An HTTPRoute's rules as Tyk ApiDefinition specs (Tyk classic API definition fields): one per
 * (attached listener, hostname it serves there — or none when it serves any host, rule, match),
 * with the lines naming what Tyk cannot do and the route's ResolvedRefs. Pure: no I/O, no clock;
 * the Services and ReferenceGrants come in as BackendFacts.
 *
 * - A match is a path prefix: `proxy.listen_path` its value, the path sent upstream unchanged
 *   (`strip_listen_path: false`). Tyk's listen path matches by characters, not by path segment
 *   as Gateway API does (`/v2` also takes `/v2example`). A value the specification's CRD refuses
 *   (not absolute, `//`, `/./`, an encoded slash, …: rules only a CEL-capable API server runs)
 *   is a line of `unsupported` naming it (`pathProblem`).
 * - Backends: core Services with a port, `http://<name>.<namespace>.svc:<port>`; several are
 *   load balanced, each repeated in the target list in proportion to its weight.
 * - Filters: request and response header set/remove (Tyk's global headers; response ones with
 *   the `header_injector` response processor Tyk before 5.3 needs), a path prefix rewrite
 *   (`ReplacePrefixMatch`: the listen path stripped, the replacement put before the rest).
 * - Timeouts: the shorter of `request` and `backendRequest` as Tyk's enforced timeout
 *   (`hard_timeouts`, whole seconds, every method) on every path of each ApiDefinition.
 * - The client's Host goes upstream (`preserve_host_header`), as Gateway API means.
 * - Anything else the route asks for (Exact or RegularExpression paths, header, query or method
 *   matches, header `add`, redirects, mirrors, full-path and hostname rewrites, timeouts that are
 *   not whole seconds, backend filters, other filters or rule fields) is a line of `unsupported`; a route with any
 *   such line is not served at all: `apis` is then empty (serving part of it would route its
 *   traffic otherwise than it says).
 * - ResolvedRefs: the first problem's reason (BackendNotFound, InvalidKind, RefNotPermitted),
 *   the message naming each. A rule with no valid backend makes no ApiDefinition: Gateway API
 *   asks for a 500 there; without an API Tyk answers 404.
 * - An HTTPS listener: `protocol: https` and its certificate Secrets in
 *   `certificate_secret_names`, by name in the route's namespace, as `<namespace>/<name>` in
 *   another (lib/kinds/shared/foreign-secrets.ts). One without a certificate that resolved gets
 *   no ApiDefinition (the route still attaches and is counted, as Gateway API asks).
 * - Ports: each ApiDefinition is served on its listener's Tyk port (`listen_port`: the
 *   listener's `tykPort`, GATEWAY_HTTP_PORT / GATEWAY_HTTPS_PORT; none when 0). Tyk serves a
 *   domain and listen path once whatever the port, so listeners of one protocol that share a
 *   hostname make one ApiDefinition, and a host and path on both an HTTP and an HTTPS listener is
 *   served over HTTPS only.
 * - `apis` is sorted by key; a second match identical on the same protocol and host is left
 *   out (the first rule wins, as Gateway API's precedence says).
 */
import { createHash } from 'node:crypto';
import type { KubeObject } from '../../kube/types.js';
import { isObject, nonEmpty } from '../../platform/guards.js';
import type { AttachedListener } from './attach.js';
import { tykDomain } from './hostnames.js';
import { condition, type Json, type NewCondition } from './model.js';

export interface BackendFacts {
  /** "namespace/name" of a Service → its ports, or null when it does not exist */
  readonly services: ReadonlyMap<string, readonly { readonly port: number; readonly name?: string }[] | null>;
  /** whether a ReferenceGrant lets the route's namespace use that Service (asked only across namespaces) */
  permitted(namespace: string, name: string): boolean;
}

export interface RouteApi {
  /** stable, short, unique within the route: first 9 hex of sha256 of what identifies it (listener protocol, hostname, match) */
  readonly key: string;
  /** the ApiDefinition spec (Tyk classic API definition fields) */
  readonly spec: Json;
}

export interface RouteTranslation {
  readonly apis: readonly RouteApi[];
  /** one line each: `spec.rules[0].matches[0].headers: header matches are not supported by Tyk` */
  readonly unsupported: readonly string[];
  /** ResolvedRefs: True `ResolvedRefs`, or False `BackendNotFound` | `InvalidKind` | `RefNotPermitted` (the first problem's reason; message names each) */
  readonly resolvedRefs: NewCondition;
}

function items(v: unknown): Json[] {
  return Array.isArray(v) ? v.filter(isObject) : [];
}

function rulesOf(route: KubeObject): Json[] {
  return items(route.spec?.rules);
}

interface BackendView {
  readonly field: string;
  readonly group: string;
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly port?: number;
  readonly weight: number;
  readonly raw: Json;
}

function backendsOf(route: KubeObject, rule: Json, r: number): BackendView[] {
  const namespace = route.metadata.namespace ?? '';
  return items(rule.backendRefs).map((b, i) => ({
    field: `spec.rules[${r}].backendRefs[${i}]`,
    group: typeof b.group === 'string' ? b.group : '',
    kind: typeof b.kind === 'string' ? b.kind : 'Service',
    namespace: nonEmpty(b.namespace) ?? namespace,
    name: typeof b.name === 'string' ? b.name : '',
    ...(typeof b.port === 'number' ? { port: b.port } : {}),
    weight: typeof b.weight === 'number' && b.weight >= 0 ? Math.floor(b.weight) : 1,
    raw: b,
  }));
}

function isService(b: BackendView): boolean {
  return (b.group === '' || b.group === 'core') && b.kind === 'Service';
}

/** The Services a route's backendRefs name ("namespace/name"), for the wiring to read. */
export function backendServicesOf(route: KubeObject): string[] {
  const out = new Set<string>();
  rulesOf(route).forEach((rule, r) => {
    for (const b of backendsOf(route, rule, r)) if (isService(b)) out.add(`${b.namespace}/${b.name}`);
  });
  return [...out].sort();
}

interface Problem {
  readonly reason: 'BackendNotFound' | 'InvalidKind' | 'RefNotPermitted';
  readonly message: string;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** Most entries a target list gets: weights whose reduced sum is larger are scaled down to it (each kept at least once). */
export const MAX_TARGETS = 100;

/** Each target repeated in proportion to its weight (weights divided by their GCD; weight 0 left out). */
export function targetList(targets: readonly { readonly url: string; readonly weight: number }[]): string[] {
  const weighted = targets.filter((t) => t.weight > 0);
  const divisor = weighted.reduce((g, t) => gcd(t.weight, g), 0);
  if (divisor === 0) return [];
  let counts = weighted.map((t) => t.weight / divisor);
  const total = counts.reduce((a, b) => a + b, 0);
  if (total > MAX_TARGETS) counts = counts.map((c) => Math.max(1, Math.round((c * MAX_TARGETS) / total)));
  return weighted.flatMap((t, i) => Array.from({ length: counts[i] ?? 0 }, () => t.url));
}

/** The valid backends of a rule, as targets with their weights; each problem is pushed to `problems`. */
function resolveBackends(route: KubeObject, rule: Json, r: number, facts: BackendFacts, problems: Problem[]): { url: string; weight: number }[] {
  const namespace = route.metadata.namespace ?? '';
  const out: { url: string; weight: number }[] = [];
  for (const b of backendsOf(route, rule, r)) {
    const what = `${b.field} (${b.namespace}/${b.name})`;
    if (!isService(b)) {
      problems.push({ reason: 'InvalidKind', message: `${what}: ${b.group === '' ? '' : `${b.group}/`}${b.kind} is not a Service` });
      continue;
    }
    if (b.namespace !== namespace && !facts.permitted(b.namespace, b.name)) {
      problems.push({ reason: 'RefNotPermitted', message: `${what}: no ReferenceGrant in ${b.namespace} lets HTTPRoutes of ${namespace} use this Service` });
      continue;
    }
    const ports = facts.services.get(`${b.namespace}/${b.name}`) ?? null;
    if (ports === null) {
      problems.push({ reason: 'BackendNotFound', message: `${what}: the Service does not exist` });
      continue;
    }
    if (b.port === undefined) {
      problems.push({ reason: 'BackendNotFound', message: `${what}: names no port` });
      continue;
    }
    const port = b.port;
    if (!ports.some((p) => p.port === port)) {
      problems.push({ reason: 'BackendNotFound', message: `${what}: the Service has no port ${port}` });
      continue;
    }
    out.push({ url: `http://${b.name}.${b.namespace}.svc:${port}`, weight: b.weight });
  }
  return out;
}

const KNOWN_RULE_FIELDS = new Set(['name', 'matches', 'filters', 'backendRefs', 'timeouts']);

/** Methods Tyk's enforced timeouts are given for (its API definition takes one entry per method). */
export const TIMEOUT_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD', 'CONNECT', 'TRACE'] as const;

/** Gateway API's Duration (GEP-2257): one to four of a number of 1 to 5 digits and its unit. */
const DURATION = /^(?:[0-9]{1,5}(?:h|ms|m|s)){1,4}$/;
const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };

/** A Gateway API Duration in milliseconds; undefined when it is not one. */
export function durationMs(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(/([0-9]+)(h|ms|m|s)/g)) total += Number(n) * (UNIT_MS[unit ?? ''] ?? 0);
  return total;
}

/**
 * A rule's timeouts as Tyk's enforced timeout in whole seconds: the shorter of `request` and
 * `backendRequest` that is not zero (Tyk makes one request upstream, never retrying, so both bound
 * that one request); undefined when neither is set or both are zero (no timeout). A value that is
 * not a Duration, or a timeout that is not whole seconds (Tyk's enforced timeouts are seconds), is
 * a line of `unsupported`.
 */
function timeoutOf(rule: Json, r: number, unsupported: string[]): number | undefined {
  if (rule.timeouts === undefined) return undefined;
  const given = isObject(rule.timeouts) ? rule.timeouts : {};
  const values: number[] = [];
  for (const key of Object.keys(given)) {
    const field = `spec.rules[${r}].timeouts.${key}`;
    const text = given[key];
    if (key !== 'request' && key !== 'backendRequest') {
      unsupported.push(`${field}: ${key} is not supported by Tyk`);
      continue;
    }
    const ms = typeof text === 'string' ? durationMs(text) : undefined;
    if (ms === undefined) {
      unsupported.push(`${field}: ${JSON.stringify(text)} is not a Gateway API duration (such as 10s, 1m30s, 500ms)`);
      continue;
    }
    if (ms % 1000 !== 0) {
      unsupported.push(`${field}: ${String(text)} is not whole seconds (Tyk's enforced timeouts are in seconds)`);
      continue;
    }
    if (ms > 0) values.push(ms / 1000);
  }
  return values.length === 0 ? undefined : Math.min(...values);
}
const KNOWN_MATCH_FIELDS = new Set(['path']);

interface RuleFilters {
  readonly setHeaders: Record<string, string>;
  readonly removeHeaders: string[];
  readonly setResponseHeaders: Record<string, string>;
  readonly removeResponseHeaders: string[];
  /** ReplacePrefixMatch's replacement */
  readonly prefixRewrite?: string;
}

function headerModifier(f: Json, field: string, unsupported: string[]): { set: Record<string, string>; remove: string[] } {
  const set: Record<string, string> = {};
  for (const h of items(f.set)) if (typeof h.name === 'string' && typeof h.value === 'string') set[h.name] = h.value;
  const remove = Array.isArray(f.remove) ? f.remove.filter((x): x is string => typeof x === 'string') : [];
  if (items(f.add).length > 0) unsupported.push(`${field}.add: adding a header is not supported by Tyk (it replaces a header, it cannot append to one); use set`);
  return { set, remove };
}

function filtersOf(rule: Json, r: number, unsupported: string[]): RuleFilters {
  const setHeaders: Record<string, string> = {};
  const removeHeaders: string[] = [];
  const setResponseHeaders: Record<string, string> = {};
  const removeResponseHeaders: string[] = [];
  let prefixRewrite: string | undefined;
  items(rule.filters).forEach((f, i) => {
    const field = `spec.rules[${r}].filters[${i}]`;
    switch (f.type) {
      case 'RequestHeaderModifier': {
        const m = headerModifier(isObject(f.requestHeaderModifier) ? f.requestHeaderModifier : {}, `${field}.requestHeaderModifier`, unsupported);
        Object.assign(setHeaders, m.set);
        removeHeaders.push(...m.remove);
        break;
      }
      case 'ResponseHeaderModifier': {
        const m = headerModifier(isObject(f.responseHeaderModifier) ? f.responseHeaderModifier : {}, `${field}.responseHeaderModifier`, unsupported);
        Object.assign(setResponseHeaders, m.set);
        removeResponseHeaders.push(...m.remove);
        break;
      }
      case 'URLRewrite': {
        const rw = isObject(f.urlRewrite) ? f.urlRewrite : {};
        if (rw.hostname !== undefined) unsupported.push(`${field}.urlRewrite.hostname: rewriting the host is not supported by Tyk`);
        const path = isObject(rw.path) ? rw.path : undefined;
        if (path?.type === 'ReplacePrefixMatch' && typeof path.replacePrefixMatch === 'string') prefixRewrite = path.replacePrefixMatch;
        else if (path !== undefined) unsupported.push(`${field}.urlRewrite.path: ${String(path.type)} is not supported by Tyk (only ReplacePrefixMatch)`);
        break;
      }
      case 'RequestRedirect':
        unsupported.push(`${field}: RequestRedirect is not supported by Tyk`);
        break;
      case 'RequestMirror':
        unsupported.push(`${field}: RequestMirror is not supported by Tyk`);
        break;
      default:
        unsupported.push(`${field}: ${typeof f.type === 'string' ? f.type : 'a filter without a type'} is not supported`);
    }
  });
  return { setHeaders, removeHeaders, setResponseHeaders, removeResponseHeaders, ...(prefixRewrite === undefined ? {} : { prefixRewrite }) };
}

interface MatchView {
  /** the listen path (a PathPrefix value); undefined when the match cannot be served */
  readonly prefix: string | undefined;
}

function matchesOf(rule: Json, r: number, unsupported: string[]): MatchView[] {
  const given = items(rule.matches);
  const matches = given.length === 0 ? [{ path: { type: 'PathPrefix', value: '/' } }] : given;
  return matches.map((m, j) => {
    const field = `spec.rules[${r}].matches[${j}]`;
    let ok = true;
    for (const key of Object.keys(m)) {
      if (KNOWN_MATCH_FIELDS.has(key)) continue;
      ok = false;
      const what = key === 'headers' ? 'header matches' : key === 'queryParams' ? 'query parameter matches' : key === 'method' ? 'method matches' : `${key} matches`;
      unsupported.push(`${field}.${key}: ${what} are not supported by Tyk`);
    }
    const path = isObject(m.path) ? m.path : {};
    const type = typeof path.type === 'string' ? path.type : 'PathPrefix';
    const value = typeof path.value === 'string' && path.value !== '' ? path.value : '/';
    if (type !== 'PathPrefix') {
      ok = false;
      unsupported.push(`${field}.path: ${type} paths are not supported by Tyk (only PathPrefix)`);
    } else {
      const problem = pathProblem(value);
      if (problem !== undefined) {
        ok = false;
        unsupported.push(`${field}.path: ${JSON.stringify(value)} ${problem}`);
      }
    }
    // Gateway API: a trailing slash of a prefix is ignored ("/foo/" is "/foo")
    const prefix = value.length > 1 && value.endsWith('/') ? value.replace(/\/+$/, '') || '/' : value;
    return { prefix: ok ? prefix : undefined };
  });
}

/** Characters a path value may hold: unreserved and sub-delims, ':', '@', '/', and %-escapes. */
const PATH_CHARACTERS = /^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|%[0-9a-fA-F]{2})+$/;

/**
 * What makes a PathPrefix value one the specification refuses (its CRD's validation rules, which
 * an API server without CEL, such as 1.20, does not run); undefined when it is a valid path.
 */
export function pathProblem(value: string): string | undefined {
  if (!value.startsWith('/')) return 'must be an absolute path (start with /)';
  for (const bad of ['//', '/./', '/../', '%2f', '%2F', '#']) if (value.includes(bad)) return `must not contain '${bad}'`;
  for (const end of ['/..', '/.']) if (value.endsWith(end)) return `must not end with '${end}'`;
  if (!PATH_CHARACTERS.test(value)) return "holds a character a path may not (only letters, digits, -._~!$&'()*+,;=:@/ and %-escapes)";
  return undefined;
}

function shortHash(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 9);
}

/** `base` with `suffix` as its path: `http://s.ns.svc:80` + `/one` → `http://s.ns.svc:80/one`. */
function withPath(base: string, suffix: string): string {
  return suffix.startsWith('/') ? `${base}${suffix}` : `${base}/${suffix}`;
}

export function translateRoute(route: KubeObject, attached: readonly AttachedListener[], backends: BackendFacts): RouteTranslation {
  const namespace = route.metadata.namespace ?? '';
  const routeName = route.metadata.name;
  const unsupported: string[] = [];
  const problems: Problem[] = [];
  const apis = new Map<string, RouteApi>();
  const routes = new Map<string, { protocol: string; at: string }>();
  rulesOf(route).forEach((rule, r) => {
    for (const key of Object.keys(rule)) {
      if (KNOWN_RULE_FIELDS.has(key)) continue;
      unsupported.push(`spec.rules[${r}].${key}: ${key} is not supported by Tyk`);
    }
    items(rule.backendRefs).forEach((b, i) => {
      if (items(b.filters).length > 0) unsupported.push(`spec.rules[${r}].backendRefs[${i}].filters: filters on a backend are not supported by Tyk`);
    });
    const filters = filtersOf(rule, r, unsupported);
    const timeout = timeoutOf(rule, r, unsupported);
    const matches = matchesOf(rule, r, unsupported);
    const targets = resolveBackends(route, rule, r, backends, problems);
    const urls = targetList(targets);
    // no valid backend: no ApiDefinition (Gateway API asks for 500 here; without an API Tyk answers 404)
    if (urls.length === 0) return;
    for (const listener of attached) {
      // an HTTPS listener none of whose certificates resolved is not served (Programmed=False)
      if (listener.protocol === 'HTTPS' && listener.certificates.length === 0) continue;
      const hosts: (string | undefined)[] = listener.hostnames.length === 0 ? [undefined] : [...listener.hostnames];
      for (const host of hosts) {
        for (const match of matches) {
          if (match.prefix === undefined) continue;
          // one per protocol, host and path: Tyk serves a domain and listen path once, whatever the port
          const key = shortHash(JSON.stringify([listener.protocol, host ?? '', 'PathPrefix', match.prefix]));
          if (apis.has(key)) continue;
          apis.set(key, { key, spec: apiSpec(namespace, routeName, listener, host, match.prefix, filters, urls, timeout) });
          routes.set(key, { protocol: listener.protocol, at: `${host ?? ''}\u0000${match.prefix}` });
        }
      }
    }
  });
  const first = problems[0];
  const resolvedRefs =
    first === undefined ? condition('ResolvedRefs', 'True', 'ResolvedRefs', 'all references resolved') : condition('ResolvedRefs', 'False', first.reason, problems.map((p) => p.message).join('; '));
  // the same host and path on an HTTP and an HTTPS listener: Tyk serves it once (its listen-path
  // collisions ignore ports), so over TLS
  const secure = new Set([...routes.values()].filter((v) => v.protocol === 'HTTPS').map((v) => v.at));
  const kept = [...apis.values()].filter((a) => {
    const v = routes.get(a.key);
    return v === undefined || v.protocol === 'HTTPS' || !secure.has(v.at);
  });
  const served = unsupported.length > 0 ? [] : kept.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { apis: served, unsupported, resolvedRefs };
}

function apiSpec(
  namespace: string,
  routeName: string,
  listener: AttachedListener,
  host: string | undefined,
  prefix: string,
  filters: RuleFilters,
  urls: readonly string[],
  timeout: number | undefined,
): Json {
  const https = listener.protocol === 'HTTPS';
  const rewrite = filters.prefixRewrite;
  const targets = rewrite === undefined ? urls : urls.map((u) => withPath(u, rewrite));
  // the backend sees the client's Host, as Gateway API means (Tyk sends the target's otherwise)
  const proxy: Json = { listen_path: prefix, strip_listen_path: rewrite !== undefined, preserve_host_header: true, target_url: targets[0] };
  if (targets.length > 1) {
    proxy.enable_load_balancing = true;
    proxy.target_list = [...targets];
  }
  const version: Json = { name: 'Default' };
  if (Object.keys(filters.setHeaders).length > 0) version.global_headers = { ...filters.setHeaders };
  if (filters.removeHeaders.length > 0) version.global_headers_remove = [...filters.removeHeaders];
  if (Object.keys(filters.setResponseHeaders).length > 0) version.global_response_headers = { ...filters.setResponseHeaders };
  if (filters.removeResponseHeaders.length > 0) version.global_response_headers_remove = [...filters.removeResponseHeaders];
  if (timeout !== undefined) {
    // an enforced timeout on every path (`.*`, a pattern Tyk's prefix and suffix matching leave
    // as it is) and method: past it Tyk answers 504
    version.use_extended_paths = true;
    version.extended_paths = { hard_timeouts: TIMEOUT_METHODS.map((method) => ({ path: '.*', method, timeout })) };
  }
  const spec: Json = {
    name: `${namespace}/${routeName} ${host ?? '*'}${prefix}`,
    use_keyless: true,
    active: true,
    protocol: https ? 'https' : 'http',
    proxy,
    version_data: { not_versioned: true, default_version: 'Default', versions: { Default: version } },
  };
  // Tyk before 5.3 applies response header transforms only with its header_injector response processor (later versions need none, and accept it)
  if (version.global_response_headers !== undefined || version.global_response_headers_remove !== undefined) spec.response_processors = [{ name: 'header_injector' }];
  if (host !== undefined) spec.domain = tykDomain(host);
  // the Tyk port of the listener's protocol (a Tyk port serves one protocol); none: Tyk's own
  if (listener.tykPort > 0) spec.listen_port = listener.tykPort;
  if (https) {
    // the listener's certificates: by name in the route's namespace, else as namespace/name (the
    // ApiDefinition phase lets a route's ApiDefinition name those of its listeners only)
    spec.certificate_secret_names = listener.certificates.map((c) => (c.namespace === namespace ? c.name : `${c.namespace}/${c.name}`));
  }
  return spec;
}

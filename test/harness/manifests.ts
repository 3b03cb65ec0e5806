/**
 * Helpers for checking the deployment files (test/unit/deploy.test.ts): reading every YAML
 * document under a directory, a small Dockerfile parser, and RBAC evaluation of recorded
 * API-server calls (the fake's `calls`) against ClusterRole rules, as the API server's RBAC
 * authorizer decides them.
 *
 * Pure apart from reading files; no network.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import yaml from 'js-yaml';

// ── YAML ─────────────────────────────────────────────────────────────────────────────────────

export interface YamlDoc {
  /** path relative to the root given to loadYamlTree */
  file: string;
  /** position of the document in its file, from 0 */
  index: number;
  doc: unknown;
}

export type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Every *.yaml / *.yml file under `dir`, recursively, relative to `root`, sorted. */
export function yamlFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const full = join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (/\.ya?ml$/.test(entry.name)) out.push(relative(root, full));
    }
  };
  walk(join(root, dir));
  return out.sort();
}

/** All documents of a YAML file (js-yaml loadAll); throws with the file name on a parse error. */
export function loadYamlFile(root: string, file: string): YamlDoc[] {
  const text = readFileSync(join(root, file), 'utf8');
  let docs: unknown[];
  try {
    docs = yaml.loadAll(text);
  } catch (err) {
    throw new Error(`${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return docs.map((doc, index) => ({ file, index, doc }));
}

/** Value at a dotted path ("spec.template.spec"), or undefined. */
export function at(v: unknown, path: string): unknown {
  let cur = v;
  for (const key of path.split('.')) {
    if (!isObj(cur)) return undefined;
    cur = cur[key];
  }
  return cur;
}

export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

// ── Dockerfile ───────────────────────────────────────────────────────────────────────────────

export interface Instruction {
  keyword: string;
  /** the arguments as written, continuation lines joined */
  args: string;
}

export interface Stage {
  /** the base image, ARG defaults substituted */
  from: string;
  name?: string;
  instructions: Instruction[];
}

/** Instructions in order (comments and blank lines dropped, `\` continuations joined). */
export function parseDockerfile(text: string): { globalArgs: Record<string, string>; stages: Stage[] } {
  const logical: string[] = [];
  let pending = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) continue;
    if (pending !== '' && line.startsWith('#')) continue; // comment lines inside a continuation
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(pending + line);
    pending = '';
  }
  if (pending !== '') logical.push(pending);
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const line of logical) {
    const m = /^(\S+)\s*(.*)$/.exec(line);
    if (!m) continue;
    const keyword = (m[1] as string).toUpperCase();
    const args = (m[2] as string).trim();
    if (keyword === 'FROM') {
      const parts = args.split(/\s+/).filter((p) => !p.startsWith('--'));
      const from = (parts[0] ?? '').replace(/\$\{(\w+)\}|\$(\w+)/g, (_all, a?: string, b?: string) => globalArgs[(a ?? b) as string] ?? '');
      const asIndex = parts.findIndex((p) => p.toUpperCase() === 'AS');
      stages.push({ from, ...(asIndex > 0 && parts[asIndex + 1] ? { name: parts[asIndex + 1] } : {}), instructions: [] });
      continue;
    }
    const stage = stages[stages.length - 1];
    if (!stage) {
      if (keyword === 'ARG') {
        const [k, v] = args.split('=', 2);
        if (k) globalArgs[k.trim()] = (v ?? '').trim().replace(/^"(.*)"$/, '$1');
      }
      continue;
    }
    stage.instructions.push({ keyword, args });
  }
  return { globalArgs, stages };
}

/** The exec form of CMD/ENTRYPOINT (a JSON array), or undefined for the shell form. */
export function execForm(args: string): string[] | undefined {
  try {
    const v = JSON.parse(args) as unknown;
    return Array.isArray(v) && v.every((x) => typeof x === 'string') ? (v as string[]) : undefined;
  } catch {
    return undefined;
  }
}

/** ENV instructions of a stage as a map (both `ENV K=V ...` and `ENV K V`). */
export function stageEnv(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of stage.instructions.filter((x) => x.keyword === 'ENV')) {
    if (/^\w+=/.test(i.args)) {
      for (const m of i.args.matchAll(/(\w+)=("[^"]*"|\S*)/g)) env[m[1] as string] = (m[2] as string).replace(/^"(.*)"$/, '$1');
    } else {
      const [k, ...rest] = i.args.split(/\s+/);
      if (k) env[k] = rest.join(' ');
    }
  }
  return env;
}

/** Whether a RUN command line invokes npm/npx as a command (not merely mentions a path). */
export function runsNpm(command: string): boolean {
  return /(^|&&|\|\||;|\|)\s*(npm|npx)(\s|$)/.test(command);
}

/**
 * Whether .dockerignore patterns exclude `path` (a file or directory in the build context).
 * Handles what these files use: exact names, directory prefixes, `*`, `**` and `!` exceptions.
 */
export function dockerIgnored(patterns: string[], path: string): boolean {
  let ignored = false;
  for (const raw of patterns) {
    const negate = raw.startsWith('!');
    const pattern = (negate ? raw.slice(1) : raw).replace(/^\/+/, '').replace(/\/+$/, '');
    const re = new RegExp(
      `^${pattern
        .split('/')
        .map((seg) =>
          seg === '**'
            ? '(?:.*)'
            : seg
                .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                .replace(/\*/g, '[^/]*')
                .replace(/\?/g, '[^/]'),
        )
        .join('/')
        .replace(/\(\?:\.\*\)\//g, '(?:.*/)?')}(?:/.*)?$`,
    );
    if (re.test(path)) ignored = !negate;
  }
  return ignored;
}

// ── RBAC ─────────────────────────────────────────────────────────────────────────────────────

/** A resource request as the API server's RBAC authorizer sees it. */
export interface ResourceRequest {
  verb: string;
  apiGroup: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

export type RbacRequest = { kind: 'resource'; req: ResourceRequest } | { kind: 'nonResource'; verb: string; path: string };

export interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

const METHOD_VERBS: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch' };

/**
 * The RBAC request for an HTTP call to the API server (the kube-apiserver's RequestInfo rules):
 * GET of one object → get, of a collection → list (watch=true → watch), POST → create,
 * PUT → update, PATCH → patch, DELETE of one → delete, of a collection → deletecollection.
 * Paths outside /api/v1 and /apis/{group}/{version} are non-resource URLs (verb = lower-case method).
 */
export function rbacRequest(method: string, path: string, query: Record<string, string> = {}): RbacRequest {
  const segs = path
    .split('/')
    .filter((s) => s !== '')
    .map(decodeURIComponent);
  let group: string | undefined;
  let rest: string[] = [];
  if (segs[0] === 'api' && segs.length >= 3) {
    group = '';
    rest = segs.slice(2);
  } else if (segs[0] === 'apis' && segs.length >= 4) {
    group = segs[1] as string;
    rest = segs.slice(3);
  }
  if (group === undefined) return { kind: 'nonResource', verb: method.toLowerCase(), path };
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest as [string, string | undefined, string | undefined];
  const m = method.toUpperCase();
  let verb: string;
  if (m === 'GET' || m === 'HEAD') verb = name === undefined ? (/^(1|t|true)$/i.test(query.watch ?? '') ? 'watch' : 'list') : 'get';
  else if (m === 'DELETE') verb = name === undefined ? 'deletecollection' : 'delete';
  else verb = METHOD_VERBS[m] ?? m.toLowerCase();
  const req: ResourceRequest = { verb, apiGroup: group, resource };
  if (subresource !== undefined) req.subresource = subresource;
  if (namespace !== undefined) req.namespace = namespace;
  if (name !== undefined) req.name = name;
  return { kind: 'resource', req };
}

/** "get tyk.tyk.io apidefinitions/status (namespaced)": one line per distinct kind of request. */
export function describeRequest(r: RbacRequest): string {
  if (r.kind === 'nonResource') return `${r.verb} ${r.path} (non-resource URL)`;
  const { verb, apiGroup, resource, subresource, namespace } = r.req;
  return `${verb} ${apiGroup === '' ? '""' : apiGroup} ${resource}${subresource ? `/${subresource}` : ''} (${namespace === undefined ? 'cluster-wide' : 'namespaced'})`;
}

function has(list: string[] | undefined, value: string): boolean {
  return (list ?? []).includes(value) || (list ?? []).includes('*');
}

/** Whether `rule` allows `r`, as Kubernetes' RBAC authorizer (rbac/v1 helpers) matches. */
export function ruleAllows(rule: PolicyRule, r: RbacRequest): boolean {
  if (r.kind === 'nonResource') {
    if (!has(rule.verbs, r.verb)) return false;
    return (rule.nonResourceURLs ?? []).some((u) => u === '*' || u === r.path || (u.endsWith('*') && r.path.startsWith(u.slice(0, -1))));
  }
  const { verb, apiGroup, resource, subresource, name } = r.req;
  if (!has(rule.verbs, verb) || !has(rule.apiGroups, apiGroup)) return false;
  const combined = subresource === undefined ? resource : `${resource}/${subresource}`;
  const resources = rule.resources ?? [];
  const resourceOk = resources.some((x) => x === '*' || x === combined || (subresource !== undefined && x === `*/${subresource}`));
  if (!resourceOk) return false;
  if (rule.resourceNames && rule.resourceNames.length > 0) return name !== undefined && rule.resourceNames.includes(name);
  return true;
}

/** Each (apiGroup, resource, verb) a rule grants, for finding grants no request used. */
export function ruleGrants(rule: PolicyRule): { apiGroup: string; resource: string; verb: string }[] {
  const out: { apiGroup: string; resource: string; verb: string }[] = [];
  for (const apiGroup of rule.apiGroups ?? []) for (const resource of rule.resources ?? []) for (const verb of rule.verbs ?? []) out.push({ apiGroup, resource, verb });
  return out;
}

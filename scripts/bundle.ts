/**
 * `npm run bundle`: one self-contained ESM bundle per Lambda function, for serverless.yml.
 *
 * The functions are the files in functions/ that export `handler` (found by esbuild's own
 * export analysis, so `export const handler`, `export function handler` and
 * `export { x as handler }` all count); each becomes `.build/<file name>/index.mjs` with every
 * dependency bundled in, so an artifact holds only the code its function runs and needs no
 * node_modules. Code a function reaches only through a dynamic import() (the Tyk Dashboard
 * client, used in pro mode only; GraphQL composition, for supergraphs; the legacy kubeconfig
 * auth-provider plugins) goes to a chunk next to it and is loaded on first use.
 *
 * Output per function: index.mjs (minified), chunks/*.mjs (code index.mjs imports, and the
 * lazily loaded chunks), *.map (source maps: not packaged, for decoding a minified stack
 * trace). `.build/meta/<name>.json` is esbuild's metafile, for "why is X in this bundle?"
 * (its `inputs`, and `imports` per input).
 *
 * Flags: --analyze prints the largest packages of each bundle; --untrimmed bundles every
 * dependency as it is, without the plugins below (to measure what they save).
 *
 * Exports `bundleAll()` (bench/coldstart.ts bundles with it); run directly, it prints a table
 * of sizes (what each function loads at start, and on first use only) and exits 1 on a failed
 * build.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const BUILD_DIR = join(ROOT, '.build');
/** The kubeconfig serverless.yml packages with the functions (custom.kubeconfig there). */
export const LAMBDA_KUBECONFIG = 'deploy/lambda/kubeconfig.yaml';

/**
 * CJS dependencies bundled into ESM call require() for Node built-ins; ESM has no `require`,
 * so give the bundle one. (Without it: "Dynamic require of "events" is not supported".) Taken
 * with process.getBuiltinModule (Node >= 22.3), not an `import` of node:module, whose ESM
 * facade costs more than the rest (see builtinsByRequire below).
 */
const BANNER = "const require = process.getBuiltinModule('node:module').createRequire(import.meta.url);";

/*
 * Trimming. A function's bundle holds what its imports reach; several dependencies reach far
 * more than we use, and a Lambda pays for it on every cold start (parse and compile, and the
 * evaluation of every CommonJS module at import). The narrowings below are applied here, not in
 * the sources, so lib/ and the tests keep the packages' public entry points; they are checked by
 * test/e2e/package.test.ts (what the bundles hold, and real requests through the watch bundle,
 * a lazily loaded auth-provider plugin's too). Measured on the watch bundle on the shared 2-core
 * machine, at a load of ~3 (Node's own start took ~105 ms then, ~35 ms when quiet): loaded at
 * start, and the import alone (median of 15 interleaved fresh processes, one sitting):
 *   untrimmed (every dependency as it is)                           1,558 KB   477 ms
 *   before the bundle trimming (only client-node and undici cut)   957 KB   337 ms
 *   lib/platform/http.ts on node:http(s), Lambda's logs without pino, and
 *     the narrowings of client-node, ioredis and pino below           362 KB   269 ms
 *   and Node's built-ins through require() (builtinsByRequire)        363 KB   208 ms
 *   and ioredis' command methods in dictionary mode                   363 KB   145 ms
 * (For comparison, process start → imported on a quiet machine: the unbundled tsc output with
 * node_modules, as first deployed, 560 ms.)
 */

/**
 * @kubernetes/client-node: we use only KubeConfig (the kubeconfig's server and credentials;
 * requests go through lib/platform/http.ts). As is, the package costs ~650 KB; the narrowings below
 * leave ~62 KB (46 KB of it js-yaml, which reads the kubeconfig) and the exec and token-file
 * credential plugins; the legacy auth-provider plugins come on first use.
 *
 * 1. the entry point `@kubernetes/client-node` → `dist/config.js` (KubeConfig and what it
 *    imports), leaving out watch/exec/attach/port-forward/informers (ws, tar-fs, …); ~125 KB.
 *    A lib/ module that starts importing anything but KubeConfig from the package fails this
 *    build ("No matching export"): that is when to revisit this.
 * 2. config.js's import of the generated code's index (`./gen/index.js`, which re-exports the
 *    ~700 model classes and every API group: ~310 KB that esbuild cannot drop, since the
 *    models register themselves with a serializer) → the two names config.js takes from it
 *    (createConfiguration, ServerConfiguration), which only makeApiClient uses: we build no
 *    generated API client, so both throw if called.
 */
/** A statement that throws: what a shim puts where left-out code would run. */
const NOT_BUNDLED = (what: string): string => `throw new Error(${JSON.stringify(`${what} is not in this bundle (scripts/bundle.ts)`)})`;
const KUBE_PACKAGE = '@kubernetes/client-node';
const KUBE_CONFIG_ONLY = `${KUBE_PACKAGE}/dist/config.js`;
const KUBE_GEN_INDEX = `
export function createConfiguration() { ${NOT_BUNDLED("@kubernetes/client-node's generated API clients (makeApiClient)")} }
export class ServerConfiguration { constructor() { ${NOT_BUNDLED("@kubernetes/client-node's generated API clients (makeApiClient)")} } }
`;

/**
 * Also inside @kubernetes/client-node (config.js, and the generated code's fetch library), for
 * its imports only:
 *
 * 3. `undici` (Agent and ProxyAgent, to build fetch dispatchers in applySecurityAuthentication;
 *    fetch, for the generated API clients) → a module whose Agent and ProxyAgent throw when
 *    constructed and whose fetch is Node's own. We call neither: KubeClient sends its requests
 *    through the transport the service chose (lib/platform/http.ts), so a webhook function's
 *    bundle (Node's own transport, lib/platform/http-node.ts) holds no undici (~330 KB, ~50 ms).
 *    The full-run functions (schedule, shard) send over undici's pooled client
 *    (lib/platform/http-undici.ts), and bundle the part of undici it uses: see trimUndici.
 * 4. `hpagent`, `socks-proxy-agent` and `socks` (for a kubeconfig's proxy-url: createAgent,
 *    which applyToHTTPSOptions calls, and createDispatcher) → agents that construct, and throw
 *    only if a connection is asked of them (~75 KB: socks, ip-address, smart-buffer). KubeClient
 *    takes the TLS settings and headers applyToHTTPSOptions gives, never the agent it puts
 *    into `opts.agent` (lib/platform/http.ts pools its own connections), so a proxy-url was not used
 *    before this either; should KubeClient start using that agent, a proxy-url fails loudly.
 * 5. the `azure`, `gcp` and `oidc` auth-provider plugins (legacy kubeconfig `auth-provider`
 *    entries; jsonpath-plus, openid-client, oauth4webapi: ~55 KB) → the same classes with the
 *    same isAuthProvider, whose applyAuthentication imports the real module on first use (a
 *    chunk next to index.mjs). A kubeconfig with a token, a client certificate, an exec plugin
 *    or a token file (the exec and file plugins stay as they are) never loads them.
 * 6. its package.json (config.js reads `version` for its User-Agent) → that field alone.
 */
const UNDICI_SHIM = `
export class Agent { constructor() { ${NOT_BUNDLED("undici's Agent (KubeClient connects through lib/platform/http.ts)")} } }
export class ProxyAgent { constructor() { ${NOT_BUNDLED("undici's ProxyAgent (KubeClient connects through lib/platform/http.ts)")} } }
export const fetch = (...args) => globalThis.fetch(...args);
`;
const PROXY_SHIM = `
import http from 'node:http';
import https from 'node:https';
export class HttpProxyAgent extends http.Agent { createConnection() { ${NOT_BUNDLED('a kubeconfig proxy-url (hpagent)')} } }
export class HttpsProxyAgent extends https.Agent { createConnection() { ${NOT_BUNDLED('a kubeconfig proxy-url (hpagent)')} } }
export class SocksProxyAgent extends https.Agent { constructor(_url, options) { super(options); } createConnection() { ${NOT_BUNDLED('a kubeconfig proxy-url (socks-proxy-agent)')} } }
export const SocksClient = { createConnection() { ${NOT_BUNDLED('a kubeconfig proxy-url (socks)')} } };
`;
/** module file → [exported class, the auth-provider name it answers for] */
const LAZY_AUTH: Record<string, [string, string]> = {
  'azure_auth.js': ['AzureAuth', 'azure'],
  'gcp_auth.js': ['GoogleCloudPlatformAuth', 'gcp'],
  'oidc_auth.js': ['OpenIDConnectAuth', 'oidc'],
};
const lazyAuthShim = (real: string, cls: string, name: string): string => `
export class ${cls} {
  isAuthProvider(user) { return Boolean(user && user.authProvider) && user.authProvider.name === ${JSON.stringify(name)}; }
  async applyAuthentication(...args) {
    this.real ??= import(${JSON.stringify(real)}).then((m) => new m.${cls}());
    return (await this.real).applyAuthentication(...args);
  }
}
`;

function trimKubeClient(): esbuild.Plugin {
  return {
    name: 'trim-kubernetes-client',
    setup(build) {
      const fromKube = (args: esbuild.OnResolveArgs): boolean => args.importer.includes(`/${KUBE_PACKAGE}/`);
      // 1: the package entry → KubeConfig's module
      build.onResolve({ filter: /^@kubernetes\/client-node$/ }, async (args) => {
        if (args.pluginData === 'trimmed') return undefined;
        const r = await build.resolve(KUBE_CONFIG_ONLY, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: 'trimmed' });
        return r.errors.length > 0 ? { errors: r.errors } : { path: r.path };
      });
      // 2: config.js's `./gen/index.js` → only what config.js imports from it
      build.onResolve({ filter: /^\.\/gen\/index\.js$/ }, (args) =>
        args.importer.endsWith(`${KUBE_PACKAGE}/dist/config.js`) ? { path: join(args.resolveDir, 'gen'), namespace: 'kube-gen-index' } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'kube-gen-index' }, (args) => ({ contents: KUBE_GEN_INDEX, resolveDir: args.path, loader: 'js' }));
      // 3: undici, for the package only → constructors that throw, Node's fetch
      build.onResolve({ filter: /^undici$/ }, (args) => (fromKube(args) ? { path: 'undici', namespace: 'kube-undici-shim' } : undefined));
      build.onLoad({ filter: /.*/, namespace: 'kube-undici-shim' }, () => ({ contents: UNDICI_SHIM, loader: 'js' }));
      // 4: the proxy agents, for the package only → agents that refuse to connect
      build.onResolve({ filter: /^(hpagent|socks-proxy-agent|socks)$/ }, (args) => (fromKube(args) ? { path: 'proxy', namespace: 'kube-proxy-shim' } : undefined));
      build.onLoad({ filter: /.*/, namespace: 'kube-proxy-shim' }, () => ({ contents: PROXY_SHIM, loader: 'js' }));
      // 5: the legacy auth-provider plugins → loaded on first use
      build.onResolve({ filter: /^\.\/(azure|gcp|oidc)_auth\.js$/ }, (args) =>
        args.importer.endsWith(`${KUBE_PACKAGE}/dist/config.js`) ? { path: join(args.resolveDir, args.path.slice(2)), namespace: 'kube-lazy-auth' } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'kube-lazy-auth' }, (args) => {
        const [cls, name] = LAZY_AUTH[basename(args.path)] ?? [];
        if (!cls || !name) return { errors: [{ text: `no lazy auth shim for ${args.path}` }] };
        return { contents: lazyAuthShim(args.path, cls, name), resolveDir: dirname(args.path), loader: 'js' };
      });
      // 6: its package.json → the version
      build.onLoad({ filter: /[\\/]@kubernetes[\\/]client-node[\\/]package\.json$/ }, (args) => {
        const { version } = JSON.parse(readFileSync(args.path, 'utf8')) as { version?: string };
        return { contents: JSON.stringify({ version }), loader: 'json' };
      });
    },
  };
}

/**
 * undici, for lib/platform/http-undici.ts (the full-run functions: schedule, shard). Its entry
 * point loads all of undici (fetch, WebSocket, EventSource, the cache stores, the mocks,
 * interceptors, proxy agents: ~570 KB loaded at start); the transport takes only the Agent and
 * its request(). So `undici`, imported by that module, becomes the Agent's own module and the
 * request API put on the dispatchers' prototype, as undici's index.js does, leaving ~320 KB
 * (145 KB of it llhttp's WebAssembly, the SIMD build and its fallback). Measured on the schedule
 * bundle, loaded at start: 391 KB on Node's transport, 946 KB with the whole of undici, 703 KB
 * trimmed. The
 * transport's contract tests run the module itself; test/e2e/package.test.ts checks the bundle
 * holds undici's Agent and none of the rest. Should undici move those files, this build fails.
 */
const UNDICI_AGENT = `
import Agent from 'undici/lib/dispatcher/agent.js';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import api from 'undici/lib/api/index.js';
Object.assign(Dispatcher.prototype, api);
export { Agent };
`;

function trimUndici(): esbuild.Plugin {
  return {
    name: 'trim-undici',
    setup(build) {
      build.onResolve({ filter: /^undici$/ }, (args) =>
        args.importer.endsWith('/lib/platform/http-undici.ts') ? { path: 'undici', namespace: 'undici-agent', pluginData: dirname(args.importer) } : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'undici-agent' }, (args) => ({ contents: UNDICI_AGENT, resolveDir: args.pluginData as string, loader: 'js' }));
    },
  };
}

/**
 * Two more packages carry code for features we never turn on, evaluated at every import:
 *
 * - ioredis: its Redis Cluster client (`./cluster`, ~35 KB) and its Sentinel connector
 *   (`./connectors/SentinelConnector`, ~7 KB), which Redis.js and index.js require up front.
 *   lib/store/redis.ts never takes the Cluster class from there: with REDIS_CLUSTER it loads it
 *   by a dynamic import of `ioredis/built/cluster/index.js` (loadRedisCluster), which lands in a
 *   chunk of its own, loaded on use; ioredis' own up-front require gets a class that throws.
 *   It never talks to sentinels (a URL cannot name them); in a bundle, that connector throws. And `debug` (~10 KB with
 *   supports-color and ms), through which ioredis logs every command with its arguments when
 *   DEBUG=ioredis:* is set (AUTH's password included): in a bundle it is always off.
 * - pino: transports (`pino.transport()` and the `transport` option: worker threads through
 *   thread-stream, ~15 KB) and `pino.multistream`. lib/platform/log.ts writes to stdout or a given
 *   stream, never a transport or a multistream; in a bundle, asking for one throws.
 *   Redaction, serializers, levels and the destination are pino's own, as they are.
 *
 * And two of our own modules that a Lambda function never reaches (functions/service.ts):
 *
 * - lib/store/memory.ts, the in-process store (~4 KB): createService builds it only without
 *   REDIS_URL, which a function refuses before building its service; in a bundle it throws.
 * - node-cron (~5 KB, its validator: lib/platform/config.ts checks RESYNC_SCHEDULE with it): a function's
 *   schedule is serverless.yml's EventBridge rule, so functions/service.ts reads its settings
 *   with RESYNC_SCHEDULE=off and the validator is never called; in a bundle it throws.
 */
const throwingClass = (name: string, what: string): string => `class ${name} { constructor() { ${NOT_BUNDLED(what)} } }`;
const SHIMS: Record<string, string> = {
  'redis-cluster': `exports.default = ${throwingClass('Cluster', "Redis Cluster from ioredis' index (lib/store/redis.ts loads it with loadRedisCluster)")};`,
  'redis-sentinel': `exports.default = ${throwingClass('SentinelConnector', 'Redis Sentinel (lib/store/redis.ts talks to one Redis)')}; exports.SentinelIterator = ${throwingClass('SentinelIterator', 'Redis Sentinel')};`,
  // the `debug` API ioredis reads (as `.default`): a function per namespace, with enabled, namespace, log, destroy
  debug:
    'function createDebug(namespace) { const fn = function () {}; fn.enabled = false; fn.namespace = namespace; fn.log = function () {}; fn.destroy = function () { return false; }; return fn; } module.exports = createDebug; createDebug.default = createDebug; createDebug.debug = createDebug;',
  'pino-transport': `module.exports = function transport() { ${NOT_BUNDLED('pino transports (lib/platform/log.ts writes to stdout)')} };`,
  'pino-multistream': `module.exports = function multistream() { ${NOT_BUNDLED('pino.multistream (lib/platform/log.ts writes to stdout)')} };`,
  'memory-store': `exports.MemoryStore = ${throwingClass('MemoryStore', 'the in-process store (a Lambda function requires REDIS_URL)')};`,
  'node-cron': `exports.validate = function validate() { ${NOT_BUNDLED("node-cron (a Lambda function's schedule is EventBridge's: RESYNC_SCHEDULE is off)")} };`,
};

function trimUnusedFeatures(): esbuild.Plugin {
  return {
    name: 'trim-unused-features',
    setup(build) {
      const from = (args: esbuild.OnResolveArgs, pkg: string, files: string[]): boolean => files.some((f) => args.importer.endsWith(`/node_modules/${pkg}/${f}`));
      const shim = (filter: RegExp, name: string, when: (args: esbuild.OnResolveArgs) => boolean): void => {
        build.onResolve({ filter }, (args) => (when(args) ? { path: name, namespace: 'unused-feature-shim' } : undefined));
      };
      shim(/^\.\/cluster$/, 'redis-cluster', (a) => from(a, 'ioredis', ['built/Redis.js', 'built/index.js']));
      shim(/^\.\/(connectors\/)?SentinelConnector$/, 'redis-sentinel', (a) => from(a, 'ioredis', ['built/Redis.js', 'built/index.js', 'built/connectors/index.js']));
      shim(/^debug$/, 'debug', (a) => from(a, 'ioredis', ['built/utils/debug.js']));
      shim(/^\.\/(lib\/)?transport$/, 'pino-transport', (a) => from(a, 'pino', ['pino.js', 'lib/tools.js']));
      shim(/^\.\/lib\/multistream$/, 'pino-multistream', (a) => from(a, 'pino', ['pino.js']));
      shim(/^\.\/store\/memory\.js$/, 'memory-store', (a) => a.importer.endsWith('/lib/service.ts'));
      shim(/^node-cron$/, 'node-cron', (a) => a.importer.endsWith('/lib/platform/config.ts'));
      build.onLoad({ filter: /.*/, namespace: 'unused-feature-shim' }, (args) => ({ contents: SHIMS[args.path] ?? NOT_BUNDLED(`no shim ${args.path}`), loader: 'js' }));
    },
  };
}

/**
 * ioredis defines a method per Redis command on `Commander.prototype` (~600 with the *Buffer
 * variants) when it loads. V8 keeps a prototype's properties in "fast" mode and copies its
 * descriptors on every addition, so those additions cost ~50 ms of a cold start (and the
 * garbage they leave); an object already in dictionary mode takes them in ~2 ms, and V8 makes
 * it fast again, once, when it is first used as a prototype. Adding and deleting one property
 * before the loop puts it in dictionary mode; the prototype ends up with the same methods.
 * Should ioredis change that line, this build fails: look at built/utils/Commander.js then.
 */
const COMMANDER_LOOP = 'const commands = commands_1.list.filter(';
const COMMANDER_DICTIONARY = 'Commander.prototype.__dictionaryMode = true; delete Commander.prototype.__dictionaryMode;\n';

function ioredisCommanderFast(): esbuild.Plugin {
  return {
    name: 'ioredis-commander-fast',
    setup(build) {
      build.onLoad({ filter: /[\\/]ioredis[\\/]built[\\/]utils[\\/]Commander\.js$/ }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        if (source.split(COMMANDER_LOOP).length !== 2) return { errors: [{ text: `ioredis changed: ${args.path} no longer holds "${COMMANDER_LOOP}" once` }] };
        return { contents: source.replace(COMMANDER_LOOP, COMMANDER_DICTIONARY + COMMANDER_LOOP), loader: 'js' };
      });
    },
  };
}

/**
 * Node's built-in modules, imported by an ES module, are loaded through their ESM facade, which
 * reads every export once, lazy getters included: `node:http`'s WebSocket, CloseEvent and
 * MessageEvent load Node's own copy of undici (~60 ms on the 2-core machine), `node:fs`'s
 * `promises` loads fs/promises. require() returns the module object and leaves those getters
 * lazy. So every `import ... from 'node:x'` (or 'x') in the bundle becomes a require() through
 * the banner's createRequire, with the same default and named bindings (esbuild's interop).
 */
function builtinsByRequire(): esbuild.Plugin {
  return {
    name: 'builtins-by-require',
    setup(build) {
      build.onResolve({ filter: /^(node:)?[a-z_]+(\/[a-z_]+)?$/ }, (args) => {
        if (args.namespace === 'builtin-require') return { path: args.path, external: true };
        const name = args.path.replace(/^node:/, '');
        if (args.kind !== 'import-statement' || !isBuiltin(name)) return undefined;
        return { path: `node:${name}`, namespace: 'builtin-require' };
      });
      build.onLoad({ filter: /.*/, namespace: 'builtin-require' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: 'js' }));
    },
  };
}

export interface BundleResult {
  name: string;
  /** the function's source, relative to the repository root */
  source: string;
  /** .build/<name>/index.mjs, absolute */
  entry: string;
  /** bytes loaded at start: index.mjs and the chunks it imports statically */
  bytes: number;
  /** the same, gzipped (roughly what it adds to the zip) */
  gzipBytes: number;
  /** bytes of the chunks loaded only by a dynamic import() (the Dashboard client, composition, auth providers) */
  lazyBytes: number;
  /** the largest inputs (bytes in the output), for --analyze */
  inputs: { path: string; bytes: number }[];
}

export interface BundleOptions {
  /** default true; false bundles every dependency as it is, without the plugins (to measure what they save) */
  trim?: boolean;
  /** the functions directory; default functions/ */
  functionsDir?: string;
  /** default .build/ (emptied first) */
  outDir?: string;
  /** bundle only these functions (by name) */
  only?: string[];
}

/** The files in `dir` whose module exports `handler`, as [name, absolute path], sorted. */
export async function lambdaEntries(dir = join(ROOT, 'functions')): Promise<[string, string][]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.endsWith('.test.ts')).sort();
  const paths = files.map((f) => join(dir, f));
  // Transform only (no bundling): what each file itself exports.
  const scan = await esbuild.build({
    entryPoints: paths,
    bundle: false,
    write: false,
    metafile: true,
    format: 'esm',
    platform: 'node',
    outdir: join(dir, '.scan'),
    absWorkingDir: ROOT,
    logLevel: 'silent',
  });
  const entries: [string, string][] = [];
  for (const out of Object.values(scan.metafile.outputs)) {
    if (!out.entryPoint || !out.exports.includes('handler')) continue;
    const abs = resolve(ROOT, out.entryPoint);
    entries.push([basename(abs, '.ts'), abs]);
  }
  return entries.sort(([a], [b]) => a.localeCompare(b));
}

export async function bundleAll(options: BundleOptions = {}): Promise<BundleResult[]> {
  const outRoot = options.outDir ?? BUILD_DIR;
  const entries = (await lambdaEntries(options.functionsDir)).filter(([name]) => options.only?.includes(name) ?? true);
  if (entries.length === 0) throw new Error(`no file in functions/ exports a handler${options.only ? ` (only ${options.only.join(', ')})` : ''}`);
  await rm(outRoot, { recursive: true, force: true });
  await mkdir(join(outRoot, 'meta'), { recursive: true });
  return Promise.all(
    entries.map(async ([name, source]) => {
      const outdir = join(outRoot, name);
      const result = await esbuild.build({
        entryPoints: { index: source },
        outdir,
        bundle: true,
        // a dynamic import() becomes a chunk loaded on first use, not code parsed at start
        splitting: true,
        chunkNames: 'chunks/[name]-[hash]',
        format: 'esm',
        outExtension: { '.js': '.mjs' },
        platform: 'node',
        target: 'node24',
        minify: true,
        // For --untrimmed, where undici comes in through @kubernetes/client-node: undici 8 carries
        // two HTTP/1 parsers, llhttp and the experimental Milo (~165 KB of WebAssembly in JS).
        // Its own build for Node core defines \`esbuildDetection\`, which selects llhttp and
        // leaves Milo's modules unreachable; so does ours.
        define: { esbuildDetection: 'true' },
        sourcemap: 'external',
        // everything is bundled but the AWS SDK, which the Lambda runtime provides (Node 24: v3,
        // importable from ES modules); only the schedule's SQS sender imports it, on demand
        external: ['@aws-sdk/*'],
        banner: { js: BANNER },
        legalComments: 'none',
        metafile: true,
        // metafile paths relative to the repository root
        absWorkingDir: ROOT,
        logLevel: 'warning',
        plugins: options.trim === false ? [] : [trimKubeClient(), trimUndici(), trimUnusedFeatures(), ioredisCommanderFast(), builtinsByRequire()],
      });
      await writeFile(join(outRoot, 'meta', `${name}.json`), JSON.stringify(result.metafile));
      const entry = join(outdir, 'index.mjs');
      const sizes = loadedAtStart(result.metafile, relative(ROOT, entry));
      return {
        name,
        source: relative(ROOT, source),
        entry,
        bytes: sizes.eager.reduce((n, f) => n + f.length, 0),
        gzipBytes: sizes.eager.reduce((n, f) => n + gzipSync(f).length, 0),
        lazyBytes: sizes.lazyBytes,
        inputs: sizes.inputs,
      };
    }),
  );
}

/**
 * The files of an esbuild output that load when `entry` is imported (it and the chunks it
 * imports statically, transitively), and the bytes of the rest (reached by import() only).
 */
function loadedAtStart(meta: esbuild.Metafile, entry: string): { eager: Buffer[]; lazyBytes: number; inputs: BundleResult['inputs'] } {
  const outputs = meta.outputs;
  const eager = new Set<string>();
  const visit = (file: string): void => {
    if (eager.has(file) || !outputs[file]) return;
    eager.add(file);
    for (const i of outputs[file].imports) if (i.kind === 'import-statement' && !i.external) visit(i.path);
  };
  visit(entry);
  if (eager.size === 0) throw new Error(`esbuild's metafile does not name ${entry}`);
  let lazyBytes = 0;
  const inputs = new Map<string, number>();
  for (const [file, out] of Object.entries(outputs)) {
    if (file.endsWith('.map')) continue;
    if (!eager.has(file)) {
      lazyBytes += out.bytes;
      continue;
    }
    for (const [path, i] of Object.entries(out.inputs)) inputs.set(path, (inputs.get(path) ?? 0) + i.bytesInOutput);
  }
  return {
    eager: [...eager].map((f) => readFileSync(resolve(ROOT, f))),
    lazyBytes,
    inputs: [...inputs].map(([path, bytes]) => ({ path, bytes })).sort((a, b) => b.bytes - a.bytes),
  };
}

export function kb(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KB`;
}

/** Groups inputs by package (node_modules/<pkg>) or by our top-level directory. */
function byPackage(inputs: BundleResult['inputs']): [string, number][] {
  const sums = new Map<string, number>();
  for (const { path, bytes } of inputs) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
    const key = m ? m[1]! : path.split('/')[0]!;
    sums.set(key, (sums.get(key) ?? 0) + bytes);
  }
  return [...sums].sort((a, b) => b[1] - a[1]);
}

function printTable(results: BundleResult[]): void {
  const rows = results.map((r) => [r.name, r.source, kb(r.bytes), kb(r.gzipBytes), r.lazyBytes ? kb(r.lazyBytes) : '-']);
  const header = ['function', 'source', 'loaded at start', 'gzipped', 'loaded on use'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  for (const r of rows) console.log(line(r));
}

async function main(): Promise<void> {
  const args = new Set(process.argv.slice(2));
  const started = performance.now();
  const results = await bundleAll({ trim: !args.has('--untrimmed') });
  console.log(`bundled ${results.length} functions into ${relative(ROOT, BUILD_DIR)}/ in ${Math.round(performance.now() - started)} ms${args.has('--untrimmed') ? ' (untrimmed)' : ''}\n`);
  printTable(results);
  if (!existsSync(join(ROOT, LAMBDA_KUBECONFIG))) {
    console.warn(
      `\nwarning: ${LAMBDA_KUBECONFIG} does not exist, so the packages will hold no kubeconfig and the deployed functions will answer 500 ` +
        `"misconfigured: KUBECONFIG: ...". Fine for packaging and tests; before deploying, create it from deploy/lambda/kubeconfig.example.yaml.`,
    );
  }
  if (args.has('--analyze')) {
    for (const r of results) {
      console.log(`\n${r.name}: largest packages loaded at start`);
      for (const [pkg, bytes] of byPackage(r.inputs).slice(0, 12)) console.log(`  ${kb(bytes).padStart(10)}  ${pkg}`);
    }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}

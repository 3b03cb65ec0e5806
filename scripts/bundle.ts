/**
 * `npm run bundle`: one self-contained ESM bundle per Lambda function, for serverless.yml.
 *
 * The functions are the files in functions/ that export `handler` (found by esbuild's own
 * export analysis, so `export const handler`, `export function handler` and
 * `export { x as handler }` all count); each becomes `.build/<file name>/index.mjs` with every
 * dependency bundled in, so an artifact holds only the code its function runs and needs no
 * node_modules. Code a function reaches only through a dynamic import() (the Tyk Dashboard
 * client, used in pro mode only) goes to a chunk next to it and is loaded on first use.
 *
 * Output per function: index.mjs (minified), chunks/*.mjs (code index.mjs imports, and the
 * lazily loaded chunk), *.map (source maps: not packaged, for decoding a minified stack
 * trace). `.build/meta/<name>.json` is esbuild's metafile, for "why is X in this bundle?"
 * (its `inputs`, and `imports` per input).
 *
 * Flags: --analyze prints the largest packages of each bundle; --untrimmed bundles
 * @kubernetes/client-node and undici as they are (to measure what the trimming below saves).
 *
 * Exports `bundleAll()` (bench/coldstart.ts bundles with it); run directly, it prints a table
 * of sizes (what each function loads at start, and on first use only) and exits 1 on a failed
 * build.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
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
 * so give the bundle one. (Without it: "Dynamic require of "events" is not supported".)
 */
const BANNER = "import { createRequire as __grCreateRequire } from 'module'; const require = __grCreateRequire(import.meta.url);";

/*
 * Trimming. A function's bundle holds what its imports reach; two dependencies reach far more
 * than we use, and a Lambda pays for it on every cold start (parse, and the evaluation of
 * every CommonJS module at import). Both narrowings are applied here, not in the sources, so
 * lib/ and the tests keep the packages' public entry points; both are checked by
 * test/e2e/package.test.ts (what the bundles hold, and real requests through the watch
 * bundle). Measured on the watch bundle, 2-core machine, process start → bundle imported
 * (median of 15 interleaved fresh processes; Node's own start is ~35 ms of it):
 *   untrimmed                  1,794 KB   188 ms
 *   @kubernetes/client-node    1,055 KB   139 ms
 *   and undici                   829 KB   116 ms
 * (For comparison: the unbundled tsc output with node_modules, as first deployed, 560 ms.)
 */

/**
 * @kubernetes/client-node: we use only KubeConfig (the kubeconfig's server and credentials;
 * requests go over undici). As is, the package costs ~650 KB; three narrowings leave ~25 KB
 * plus the auth helpers (oidc, exec, cloud providers, proxies) a kubeconfig may name:
 *
 * 1. the entry point `@kubernetes/client-node` → `dist/config.js` (KubeConfig and what it
 *    imports), leaving out watch/exec/attach/port-forward/informers (ws, tar-fs, …); ~125 KB.
 *    A lib/ module that starts importing anything but KubeConfig from the package fails this
 *    build ("No matching export"): that is when to revisit this.
 * 2. config.js's import of the generated code's index (`./gen/index.js`, which re-exports the
 *    ~700 model classes and every API group: ~310 KB that esbuild cannot drop, since the
 *    models register themselves with a serializer) → the two modules config.js takes from it
 *    (createConfiguration, ServerConfiguration).
 * 3. `node-fetch` (v2, CommonJS: whatwg-url, tr46 and its 254 KB Unicode table, all evaluated
 *    at import) → Node's own fetch and Headers, for the package's imports only (~300 KB). The
 *    package uses it in applyToFetchOptions and the generated API clients, neither of which
 *    we call (KubeClient uses applyToHTTPSOptions).
 */
const KUBE_PACKAGE = '@kubernetes/client-node';
const KUBE_CONFIG_ONLY = `${KUBE_PACKAGE}/dist/config.js`;
const KUBE_GEN_INDEX = "export { createConfiguration } from './configuration.js'; export { ServerConfiguration } from './servers.js';";
const NODE_FETCH_SHIM = 'export default globalThis.fetch; export const { Headers, Request, Response, FormData } = globalThis;';

function trimKubeClient(): esbuild.Plugin {
  return {
    name: 'trim-kubernetes-client',
    setup(build) {
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
      // 3: node-fetch, for the package only → Node's globals
      build.onResolve({ filter: /^node-fetch$/ }, (args) => (args.importer.includes(`/${KUBE_PACKAGE}/`) ? { path: 'node-fetch', namespace: 'node-fetch-shim' } : undefined));
      build.onLoad({ filter: /.*/, namespace: 'node-fetch-shim' }, () => ({ contents: NODE_FETCH_SHIM, loader: 'js' }));
    },
  };
}

/**
 * undici: lib/http.ts uses only `Agent` and `request`; @kubernetes/client-node 2.x imports
 * `Agent` and `ProxyAgent` (to build fetch dispatchers in applyToFetchOptions) and `fetch` (for
 * its generated API clients, watch, log and metrics), none of which we call: KubeClient takes
 * only the kubeconfig's server and credentials (applyToHTTPSOptions). undici's entry point also
 * loads fetch, WebSocket, EventSource, cookies, caches, proxies and mocks (~700 KB in undici 8,
 * ~50 ms at import). For both importers, `undici` resolves to the module below instead: Agent
 * and ProxyAgent from their own modules, `fetch` as Node's own (it is never called from the
 * bundle; should it be, Node's fetch works, with Node's dispatcher), and `request` built as
 * undici's index.js builds it (its `makeDispatcher(api.request)`, repeated here; MIT licence,
 * undici 8.x). Should undici move these modules, this build fails to resolve them: compare with
 * node_modules/undici/index.js then.
 */
const UNDICI_TRIMMED = `'use strict'
const Agent = require('./lib/dispatcher/agent')
const ProxyAgent = require('./lib/dispatcher/proxy-agent')
const Dispatcher = require('./lib/dispatcher/dispatcher')
const api = require('./lib/api/index')
const util = require('./lib/core/util')
const { InvalidArgumentError } = require('./lib/core/errors')
const { getGlobalDispatcher } = require('./lib/global')
Object.assign(Dispatcher.prototype, api)
function makeDispatcher (fn) {
  return (url, opts, handler) => {
    if (typeof opts === 'function') { handler = opts; opts = null }
    if (!url || (typeof url !== 'string' && typeof url !== 'object' && !(url instanceof URL))) throw new InvalidArgumentError('invalid url')
    if (opts != null && typeof opts !== 'object') throw new InvalidArgumentError('invalid opts')
    if (opts && opts.path != null) {
      if (typeof opts.path !== 'string') throw new InvalidArgumentError('invalid opts.path')
      const path = opts.path.startsWith('/') ? opts.path : '/' + opts.path
      url = new URL(util.parseOrigin(url).origin + path)
    } else {
      if (!opts) opts = typeof url === 'object' ? url : {}
      url = util.parseURL(url)
    }
    const { agent, dispatcher = getGlobalDispatcher(), ...restOpts } = opts
    if (agent) throw new InvalidArgumentError('unsupported opts.agent. Did you mean opts.client?')
    return fn.call(dispatcher, { ...restOpts, origin: url.origin, path: url.search ? url.pathname + url.search : url.pathname, method: opts.method || (opts.body ? 'PUT' : 'GET') }, handler)
  }
}
module.exports.Agent = Agent
module.exports.ProxyAgent = ProxyAgent
module.exports.fetch = (...args) => globalThis.fetch(...args)
module.exports.request = makeDispatcher(api.request)
`;

function trimUndici(): esbuild.Plugin {
  return {
    name: 'trim-undici',
    setup(build) {
      build.onResolve({ filter: /^undici$/ }, async (args) => {
        const ours = args.importer.endsWith(join('lib', 'http.ts'));
        if (!ours && !args.importer.includes(`/${KUBE_PACKAGE}/`)) return undefined;
        const pkg = await build.resolve('undici/package.json', { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer });
        return pkg.errors.length > 0 ? { errors: pkg.errors } : { path: dirname(pkg.path), namespace: 'undici-trimmed' };
      });
      build.onLoad({ filter: /.*/, namespace: 'undici-trimmed' }, (args) => ({ contents: UNDICI_TRIMMED, resolveDir: args.path, loader: 'js' }));
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
  /** bytes of the chunks loaded only by a dynamic import() (the Tyk Dashboard client) */
  lazyBytes: number;
  /** the largest inputs (bytes in the output), for --analyze */
  inputs: { path: string; bytes: number }[];
}

export interface BundleOptions {
  /** default true; false bundles @kubernetes/client-node and undici as they are (to measure what trimming saves) */
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
        // undici 8 carries two HTTP/1 parsers: llhttp and the experimental Milo (~165 KB of
        // WebAssembly in JS). Its own build for Node core defines \`esbuildDetection\`, which
        // selects llhttp and leaves Milo's modules unreachable; so does ours.
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
        plugins: options.trim === false ? [] : [trimKubeClient(), trimUndici()],
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

/**
 * The floor of a no-op full run: the least any reconciler must do to know that nothing changed,
 * measured in the measured process with plain requests, no planning, hashing or writing:
 *
 *   ┌─ every page of the ApiDefinitions (all namespaces, limit 500, following `continue`,
 *   │  one after the other as they must be), each fetched and JSON.parse'd; then one store
 *   │  round trip for the N records of the objects listed (Redis: one MGET of their keys, each
 *   │  value JSON.parse'd; memory store: getRecords of the N keys)
 *   └─ concurrently: the gateway's full list (GET /tyk/apis; of a gateway of several replicas,
 *      every replica's list, concurrently), fetched and parsed, each API
 *      JSON.parse'd on its own bytes as they arrive (lib/platform/json-items.ts, as our client reads
 *      it): the ~75 MB list is never held whole, in the floor or in our runs, so the floor
 *      leaves no such garbage in the measured process's memory before a steady run.
 *
 * Same URLs and credentials as our clients (KubeClient: `<server>/apis/tyk.tyk.io/v1alpha1/
 * apidefinitions?limit=500&continue=...` with the kubeconfig's bearer token; TykGatewayClient:
 * `<TYK_URL>/tyk/apis` with x-tyk-authorization), over undici's pooled client as full runs
 * use it (./write-floor.ts floorAgent: keep-alive, pipelining 1, HTTP/1.1), agents of its own
 * (kept across floor runs, as our clients keep theirs across runs; a request that meets a
 * reset pooled socket is sent once more, as lib/platform/http.ts does). A floor run that does
 * not see N objects, N gateway APIs and N records throws: it would not be the job's floor.
 */
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { type Agent, request } from 'undici';
import { readJsonItems } from '../lib/platform/json-items.js';
import type { Store } from '../lib/store/types.js';
import { isReset } from './shared.js';
import { floorAgent } from './write-floor.js';

export interface FloorTarget {
  kubeUrl: string;
  kubeToken: string;
  tykUrl: string;
  tykSecret: string;
  pageSize: number;
  /** the store the reconciler uses: Redis (its URL and our store's key prefix) or the in-process one */
  store: { kind: 'redis'; url: string; prefix: string } | { kind: 'memory'; store: Store };
  /** a gateway of several replicas: every replica's list, concurrently (absent: tykUrl's alone) */
  tykUrls?: readonly string[];
}

export interface FloorRun {
  ms: number;
  pages: number;
  items: number;
  gatewayItems: number;
  records: number;
}

interface ListPage {
  items?: { metadata?: { namespace?: string; name?: string } }[];
  metadata?: { continue?: string };
}

export class Floor {
  private readonly kubeAgent = floorAgent(16);
  private readonly tykAgent = floorAgent(16);
  private readonly redis: Redis | undefined;

  constructor(private readonly target: FloorTarget) {
    this.redis = target.store.kind === 'redis' ? new Redis(target.store.url, { maxRetriesPerRequest: 1 }) : undefined;
  }

  /** A GET, sent once more on a fresh socket when a pooled keep-alive one the server had just closed resets (as lib/platform/http.ts does). */
  private get(agent: Agent, url: string, headers: Record<string, string>) {
    const get = () => request(url, { method: 'GET', headers: { accept: 'application/json', ...headers }, dispatcher: agent });
    return get().catch((err: unknown) => (isReset(err) ? get() : Promise.reject(err)));
  }

  private async getJson(agent: Agent, url: string, headers: Record<string, string>): Promise<unknown> {
    const res = await this.get(agent, url, headers);
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`floor: GET ${url}: ${res.statusCode} ${text.slice(0, 200)}`);
    return JSON.parse(text);
  }

  private async records(keys: string[]): Promise<number> {
    const s = this.target.store;
    if (s.kind === 'memory') return (await s.store.getRecords(keys)).filter((r) => r !== null).length;
    const values = await (this.redis as Redis).mget(keys.map((k) => `${s.prefix}rec:${k}`));
    let found = 0;
    for (const v of values) if (v !== null && JSON.parse(v) !== null) found++;
    return found;
  }

  /** The ApiDefinition page chain, then the records of what it listed. */
  private async desiredAndRecords(): Promise<{ pages: number; items: number; records: number }> {
    const t = this.target;
    const auth = { authorization: `Bearer ${t.kubeToken}` };
    const keys: string[] = [];
    let pages = 0;
    let cont: string | undefined;
    do {
      const url = new URL(`${t.kubeUrl.replace(/\/+$/, '')}/apis/tyk.tyk.io/v1alpha1/apidefinitions`);
      url.searchParams.set('limit', String(t.pageSize));
      if (cont !== undefined) url.searchParams.set('continue', cont);
      const page = (await this.getJson(this.kubeAgent, url.toString(), auth)) as ListPage;
      pages++;
      for (const o of page.items ?? []) keys.push(`ApiDefinition/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`);
      cont = page.metadata?.continue || undefined;
    } while (cont !== undefined);
    return { pages, items: keys.length, records: await this.records(keys) };
  }

  /** The gateway's list, each API JSON.parse'd on its own bytes as they arrive (lib/platform/json-items.ts), as any client that does not hold ~75 MB at once reads it. */
  private async gatewayList(base: string): Promise<number> {
    const url = `${base.replace(/\/+$/, '')}/tyk/apis`;
    const res = await this.get(this.tykAgent, url, { 'x-tyk-authorization': this.target.tykSecret });
    if (res.statusCode !== 200) throw new Error(`floor: GET ${url}: ${res.statusCode} ${(await res.body.text()).slice(0, 200)}`);
    let parsed = 0;
    await readJsonItems(res.body, () => {
      parsed++;
    });
    return parsed;
  }

  /** One floor run; `expect` is N. */
  async run(expect: number): Promise<FloorRun> {
    const start = performance.now();
    const urls = this.target.tykUrls ?? [this.target.tykUrl];
    const [d, ...lists] = await Promise.all([this.desiredAndRecords(), ...urls.map((u) => this.gatewayList(u))]);
    const ms = performance.now() - start;
    const gatewayItems = Math.min(...lists);
    if (d.items !== expect || lists.some((n) => n !== expect) || d.records !== expect) {
      throw new Error(`floor: expected ${expect} objects, gateway APIs (on each replica) and records; saw ${d.items}, ${lists.join('/')}, ${d.records}`);
    }
    return { ms: Math.round(ms), ...d, gatewayItems };
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.kubeAgent.close(), this.tykAgent.close(), this.redis?.quit()]);
  }
}

/**
 * The floors of the full runs that create every object: the requests any reconciler must send
 * for them, in the order the rules impose, with plain requests and nothing else: no reading of
 * desired state, planning, hashing, store, lock or settle wait.
 *
 * `run`, the first run (nothing on the gateway, no finalizer, no status):
 *   for each object (at most `concurrency` at a time):
 *     PATCH the ApiDefinition's finalizers (merge patch, as Tyk Operator's finalizer goes on
 *     before the first gateway write), then POST its definition to the gateway (/tyk/apis);
 *   one group reload (GET /tyk/reload/group), then the gateway's list, read whole, once it shows
 *   them (the read-back a status saying the gateway serves the spec stands on; as `runGatewayOnly`);
 *   for each object (at most `concurrency` at a time):
 *     PATCH its status (merge patch on /status: api_id and the two conditions), then POST its Event.
 *
 * `runGatewayOnly`, a gateway restart (the resources keep their finalizers and status, the
 * gateway lost everything): POST every definition (at most `concurrency` at a time), one group
 * reload, then the gateway's list, read whole, once it shows them (10 ms after the reload, and
 * again every 10 ms until it does).
 *
 * `runUpdates`, the drift's writes (the gateway holds every object, some of them edited there):
 * PUT each drifted object's definition (/tyk/apis/{id}, at most `concurrency` at a time), then
 * one group reload.
 *
 * Same URLs, credentials and bodies as our clients send (the body is the one
 * apiDefinitionPayload builds from the spec), over the fastest client we have: undici's pooled
 * client (`floorAgent`: keep-alive, pipelining 1, HTTP/1.1, as lib/platform/http-undici.ts
 * sets it up for full runs), one Agent for the API server and one for the gateway, each with as
 * many connections as the floor's concurrency. Every answer must be a 2xx, else the floor
 * throws: a floor that failed its writes is not the job's floor. The bench runs each on the
 * fakes as seeding left them (bench/run.ts), at each of WRITE_FLOOR_CONCURRENCIES (8, 16, 32,
 * 64), and reports each (WriteFloorFigure) and the best of them (`bestWriteFloor`: the most
 * objects a second).
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { mapLimit } from '../lib/engine/concurrency.js';
import type { JsonObject } from '../lib/gateway/types.js';
import { isReset } from './shared.js';

export interface WriteFloorTarget {
  kubeUrl: string;
  kubeToken: string;
  tykUrl: string;
  tykSecret: string;
}

/** One object to create: where it lives, its gateway id and the body we send for it. */
export interface WriteFloorObject {
  namespace: string;
  name: string;
  id: string;
  body: JsonObject;
}

export interface WriteFloorRun {
  ms: number;
  requests: number;
}

/** The concurrencies the write floors are measured at: the reconciler's own (8) and wider. */
export const WRITE_FLOOR_CONCURRENCIES: readonly number[] = [8, 16, 32, 64];

/** A write floor at one concurrency, as the bench reports it. */
export interface WriteFloorFigure {
  concurrency: number;
  ms: number;
  objectsPerSec: number;
  requests: number;
  /** CPU of this process (the floor's client) and of the fakes during it, ms */
  cpuMs: number;
  fakesCpuMs: number;
}

/** The fastest of a phase's write floors (the most objects a second; of equals, the lower concurrency); undefined for none. */
export function bestWriteFloor<F extends Pick<WriteFloorFigure, 'concurrency' | 'objectsPerSec'>>(figures: readonly F[]): F | undefined {
  let best: F | undefined;
  for (const f of figures) if (!best || f.objectsPerSec > best.objectsPerSec || (f.objectsPerSec === best.objectsPerSec && f.concurrency < best.concurrency)) best = f;
  return best;
}

/** undici's pooled client as the floors use it: keep-alive 10 s, pipelining 1, HTTP/1.1, up to `connections` per origin (lib/platform/http-undici.ts's settings). */
export function floorAgent(connections: number): Agent {
  return new Agent({ connections, pipelining: 1, keepAliveTimeout: 10_000, keepAliveMaxTimeout: 10_000, allowH2: false });
}

const FINALIZER = 'finalizers.tyk.io/apidefinition';

export class WriteFloor {
  private readonly kubeAgent: Agent;
  private readonly tykAgent: Agent;
  private runs = 0;

  constructor(
    private readonly target: WriteFloorTarget,
    private readonly concurrency: number,
  ) {
    this.kubeAgent = floorAgent(concurrency);
    this.tykAgent = floorAgent(concurrency);
  }

  /** One request; its answer, parsed (what every client does with one). */
  private async send(agent: Agent, method: 'PATCH' | 'POST' | 'PUT' | 'GET', url: string, headers: Record<string, string>, body?: unknown): Promise<unknown> {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const go = () => request(url, { method, headers: { accept: 'application/json', ...headers }, ...(text !== undefined ? { body: text } : {}), dispatcher: agent });
    const res = await go().catch((err: unknown) => (isReset(err) ? go() : Promise.reject(err)));
    const answer = await res.body.text();
    if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`write floor: ${method} ${url}: ${res.statusCode} ${answer.slice(0, 200)}`);
    return JSON.parse(answer);
  }

  async run(objects: readonly WriteFloorObject[]): Promise<WriteFloorRun> {
    const t = this.target;
    const kube = t.kubeUrl.replace(/\/+$/, '');
    const { tyk, tykAuth } = this.tyk();
    const kubeAuth = { authorization: `Bearer ${t.kubeToken}`, 'content-type': 'application/json' };
    const merge = { ...kubeAuth, 'content-type': 'application/merge-patch+json' };
    const path = (o: WriteFloorObject) => `${kube}/apis/tyk.tyk.io/v1alpha1/namespaces/${o.namespace}/apidefinitions/${o.name}`;
    const start = performance.now();
    await mapLimit(objects, this.concurrency, async (o) => {
      await this.send(this.kubeAgent, 'PATCH', path(o), merge, { metadata: { finalizers: [FINALIZER] } });
      await this.send(this.tykAgent, 'POST', `${tyk}/tyk/apis`, tykAuth, o.body);
    });
    await this.send(this.tykAgent, 'GET', `${tyk}/tyk/reload/group`, tykAuth);
    const lists = await this.untilListed(objects.length);
    const now = new Date().toISOString();
    // Event names new in every floor run (a run's Events stay in the fake)
    const run = `${Date.now().toString(36)}${(this.runs++).toString(36)}`;
    await mapLimit(objects, this.concurrency, async (o, i) => {
      await this.send(this.kubeAgent, 'PATCH', `${path(o)}/status`, merge, {
        status: {
          api_id: o.id,
          conditions: [
            { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: 'the last write was accepted by the gateway', lastTransitionTime: now, observedGeneration: 1 },
            { type: 'Ready', status: 'True', reason: 'Available', message: 'the gateway serves the current spec', lastTransitionTime: now, observedGeneration: 1 },
          ],
        },
      });
      await this.send(this.kubeAgent, 'POST', `${kube}/api/v1/namespaces/${o.namespace}/events`, kubeAuth, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${o.name}.floor${run}x${i.toString(16)}`, namespace: o.namespace },
        involvedObject: { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', name: o.name, namespace: o.namespace },
        type: 'Normal',
        reason: 'Synced',
        message: `created in cluster: written to gateway default as ${o.id}`,
        source: { component: 'gateway-reconciler' },
        reportingComponent: 'gateway-reconciler',
        reportingInstance: 'bench',
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      });
    });
    return { ms: Math.round(performance.now() - start), requests: objects.length * 4 + 1 + lists };
  }

  /** The gateway's base URL and the headers of its admin API. */
  private tyk(): { tyk: string; tykAuth: Record<string, string> } {
    return { tyk: this.target.tykUrl.replace(/\/+$/, ''), tykAuth: { 'x-tyk-authorization': this.target.tykSecret, 'content-type': 'application/json' } };
  }

  async runGatewayOnly(objects: readonly WriteFloorObject[]): Promise<WriteFloorRun> {
    const { tyk, tykAuth } = this.tyk();
    const start = performance.now();
    await mapLimit(objects, this.concurrency, async (o) => {
      await this.send(this.tykAgent, 'POST', `${tyk}/tyk/apis`, tykAuth, o.body);
    });
    await this.send(this.tykAgent, 'GET', `${tyk}/tyk/reload/group`, tykAuth);
    const lists = await this.untilListed(objects.length);
    return { ms: Math.round(performance.now() - start), requests: objects.length + 1 + lists };
  }

  /** After a reload: the gateway's list, read whole, until it holds `count` APIs (a reload takes effect after its answer, the fake's 5 ms later); answers how many lists it read. */
  private async untilListed(count: number): Promise<number> {
    const { tyk, tykAuth } = this.tyk();
    for (let lists = 1; ; lists++) {
      await sleep(10);
      const listed = await this.send(this.tykAgent, 'GET', `${tyk}/tyk/apis`, tykAuth);
      if (Array.isArray(listed) && listed.length >= count) return lists;
      if (lists >= 20) throw new Error(`write floor: the gateway lists ${Array.isArray(listed) ? listed.length : 'no list'} APIs, not ${count}`);
    }
  }

  async runUpdates(objects: readonly WriteFloorObject[]): Promise<WriteFloorRun> {
    const { tyk, tykAuth } = this.tyk();
    const start = performance.now();
    await mapLimit(objects, this.concurrency, async (o) => {
      await this.send(this.tykAgent, 'PUT', `${tyk}/tyk/apis/${encodeURIComponent(o.id)}`, tykAuth, o.body);
    });
    await this.send(this.tykAgent, 'GET', `${tyk}/tyk/reload/group`, tykAuth);
    return { ms: Math.round(performance.now() - start), requests: objects.length + 1 };
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.kubeAgent.close(), this.tykAgent.close()]);
  }
}

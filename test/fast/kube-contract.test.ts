/**
 * The KubeApi contract (test/memory/contract.ts) against both implementations: MemoryKube,
 * and our KubeClient over HTTP against the loopback API server (which serves our CRDs), over
 * each HTTP transport (lib/platform/http-node.ts, lib/platform/http-undici.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import t from 'tap';
import { KubeClient } from '../../lib/kube/client.js';
import type { KubeObject } from '../../lib/kube/types.js';
import type { TransportFactory } from '../../lib/platform/http.js';
import { undiciTransports } from '../../lib/platform/http-undici.js';
import { type FaultSpec, startFakeKubeApiServer } from '../fakes/kube-apiserver.js';
import { FakeClock } from '../harness/clock.js';
import { type KubeFaultOp, type KubeSubject, kubeContract } from '../memory/contract.js';
import type { FailHow } from '../memory/faults.js';
import { kubeFailure, MemoryKube } from '../memory/kube.js';

async function memory(): Promise<KubeSubject> {
  const kube = new MemoryKube({ clock: new FakeClock() });
  return {
    api: kube,
    seed: async (obj) => kube.put(obj),
    read: async (kind, namespace, name) => kube.read(kind, name, namespace),
    delete: async (kind, namespace, name) => {
      kube.delete(kind, name, namespace);
    },
    failNext: (op: KubeFaultOp, how: FailHow, times = 1) => {
      kube.inject({ op, kind: 'ApiDefinition', match: (c) => c.namespace === 'default', times, error: () => kubeFailure(how, `${op} apidefinitions`) });
    },
    conflictNext: (times) => {
      kube.inject({ op: 'patchFinalizers', times, error: () => kubeFailure({ status: 409 }, 'update finalizers of apidefinitions') });
    },
    close: async () => {},
  };
}

const COLLECTION = '/apis/tyk.tyk.io/v1alpha1/namespaces/default/apidefinitions';
const WHERE: Record<KubeFaultOp, Pick<FaultSpec, 'method' | 'path'>> = {
  list: { method: 'GET', path: COLLECTION },
  get: { method: 'GET', path: new RegExp(`^${COLLECTION}/[^/]+$`) },
  patchStatus: { method: 'PATCH', path: new RegExp(`^${COLLECTION}/[^/]+/status$`) },
};

async function overHttp(transport?: TransportFactory): Promise<KubeSubject> {
  const fake = await startFakeKubeApiServer();
  const dir = await mkdtemp(join(tmpdir(), 'gr-contract-'));
  const kc = new KubeConfig();
  kc.loadFromFile(await fake.writeKubeconfig(dir));
  const client = new KubeClient(kc, { timeoutMs: 5_000, instance: 'contract', ...(transport ? { transport } : {}) });
  return {
    api: client,
    seed: async (obj) => fake.put(obj) as KubeObject,
    read: async (kind, namespace, name) => fake.getObject(kind.plural, namespace, name) as KubeObject | undefined,
    delete: async (kind, namespace, name) => {
      fake.markDeleting(kind.plural, namespace, name);
    },
    failNext: (op, how, times = 1) => {
      // a dropped connection is retried once by the client (lib/platform/http.ts): drop both
      fake.inject('unavailable' in how ? { ...WHERE[op], drop: true, times: times * 2 } : { ...WHERE[op], status: how.status, times });
    },
    conflictNext: (times) => {
      fake.inject({ method: 'PATCH', path: new RegExp(`^${COLLECTION}/[^/]+$`), status: 409, times });
    },
    close: async () => {
      await client.close();
      await fake.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

kubeContract(t, 'MemoryKube', memory);
kubeContract(t, "KubeClient over HTTP (Node's own)", () => overHttp());
kubeContract(t, "KubeClient over HTTP (undici's pooled client)", () => overHttp(undiciTransports()));

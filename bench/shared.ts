/**
 * What the bench's processes share: the objects' names, the storm's marker, the shapes of the
 * call counts the fakes process reports.
 */

export interface KubeCounts {
  /** GET pages of the ApiDefinition collection (any namespace) */
  listPages: number;
  /** GET of other collections (other kinds, each listed once per run even when empty) */
  otherLists: number;
  /** GET of one ApiDefinition */
  gets: number;
  /** GET of one object of another kind */
  otherGets: number;
  statusPatches: number;
  /** PATCH of an object's main resource by the reconciler (finalizers) */
  finalizerPatches: number;
  /** creates and patches of core/v1 Events */
  eventWrites: number;
  /** everything else (discovery, SelfSubjectReview, PUT, DELETE, ...) */
  other: number;
  total: number;
}

export interface GatewayCounts {
  /** GET of a collection: /tyk/apis, /tyk/apis/oas, /tyk/policies */
  list: number;
  /** GET of one object */
  get: number;
  /** POST, PUT, DELETE of APIs and policies */
  write: number;
  /** GET /tyk/reload and /tyk/reload/group */
  reload: number;
  /** reloads the fake applied, and lost (none unless a test drops them) */
  reloadsApplied: number;
  reloadsDropped: number;
  other: number;
  total: number;
}

export interface Counts {
  kube: KubeCounts;
  gateway: GatewayCounts;
  /** CPU time the fakes process used since the last resetCalls (user + system), ms */
  fakesCpuMs: number;
}

export interface Endpoints {
  kubeUrl: string;
  kubeToken: string;
  kubeconfigYaml: string;
  tykUrl: string;
  tykSecret: string;
  /** the fakes process's back door for the storm's cluster users (POST /write), see fakes-child.ts */
  usersUrl: string;
}

/** What a storm user writes (POST /write to the fakes process): a spec edit (rate) or an annotation (touch). */
export interface UserWrite {
  namespace: string;
  name: string;
  /** a new spec.global_rate_limit.rate */
  rate?: number;
  /** the annotation bench.example.com/touched */
  touch?: string;
}

export const NAMESPACES = ['team-a', 'team-b', 'team-c', 'team-d'];

/** The i-th object of the bench (namespace, name), as seeded. */
export function objectName(i: number): { namespace: string; name: string } {
  return { namespace: NAMESPACES[i % NAMESPACES.length] as string, name: `api-${String(i).padStart(5, '0')}` };
}

/** A connection reset before any answer (lib/platform/http.ts retries these once too). */
export function isReset(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } } | null;
  const code = e?.code ?? e?.cause?.code;
  return code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE';
}

/** The nearest-rank `p`th percentile (0–100) of ascending `sorted`; 0 for none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/** The Service whose EndpointSlices name the gateway's replicas in the replicas phase (TYK_GATEWAY_SERVICE). */
export const REPLICA_SERVICE = { namespace: 'tyk', name: 'gateway-svc', port: 'http' } as const;

/**
 * Desired state: what the reconciler needs from the Kubernetes API server, as a narrow
 * interface. The implementation (lib/kube/client.ts) speaks HTTP; lib/engine depends
 * only on this file.
 *
 * Guarantees of every implementation:
 * - `get` resolves null only on a 404 (the object is confirmed gone); any other failure throws.
 * - `list` returns every object or throws: a partial list is never returned.
 * - writes that replace lists (finalizers) carry the resourceVersion they were computed from
 *   and are retried on 409 after a fresh read.
 * - createObject, replaceObject and deleteObject (the ApiDefinitions an Ingress generates) are
 *   single attempts: a 409 (AlreadyExists, a stale resourceVersion, a failed precondition) is a
 *   KubeConflictError for the caller to re-read; deleteObject says `not found` on 404.
 * Throws KubeApiError, KubeConflictError, KubeUnavailableError (lib/platform/errors.ts).
 */

export interface ResourceKind {
  /** e.g. "ApiDefinition" */
  readonly kind: string;
  readonly group: string;
  readonly version: string;
  /** e.g. "apidefinitions" */
  readonly plural: string;
}

/** A namespaced object's coordinates, without its kind. */
export interface NamespacedName {
  namespace: string;
  name: string;
}

/** "namespace/name". */
export function nsName(r: NamespacedName): string {
  return `${r.namespace}/${r.name}`;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [key: string]: unknown;
}

export interface ListOptions {
  labelSelector?: string;
  /**
   * Only metadata is needed (to count objects): asked as a PartialObjectMetadataList, which
   * the API server answers with each item's metadata alone; a server that cannot answers the
   * full list, which is as good. Items then have metadata only.
   */
  metadataOnly?: boolean;
  /**
   * Which items to return: each item is offered as its page is read, and one it answers false
   * for is dropped then, so a caller that wants part of a large namespace (a shard's range, a
   * chunk's objects) never holds the rest. Default: every item. A listing started again (an
   * expired continue token) offers its items again.
   */
  keep?: (obj: KubeObject) => boolean;
  /**
   * Only names in a range are wanted (a shard's part of a large namespace, whose `keep` holds
   * the exact test): the paging may be cut short, the answer is never widened. For the listing
   * of one namespace only; ignored for all namespaces.
   */
  range?: ListRange;
}

/**
 * Where a listing of one namespace's names may begin and end (lib/scale/list-ranges.ts makes
 * them). The API server pages a namespace in name order (a continue token is the key after its
 * page's last): a range's listing begins at the page where the range before it stopped, and
 * stops once a page reaches its end.
 */
export interface ListRange {
  /** A continue token to begin at; one the API server answers 410 (too old) is dropped, and the listing begins at the first page. */
  readonly startAt?: string;
  /** A listing begins (or begins again, from the first page): the names seen so far are forgotten. */
  begin(): void;
  /** Each item's name, as its page is read, in order. */
  seen(name: string): void;
  /** After each page: true (once) when the listing may stop here. */
  reached(): boolean;
  /** The continue token of the page after which the listing stopped, when that page had one: where the next range begins. */
  stoppedAt(token: string): void;
}

export interface KubeApi {
  /** The object, or null when the API server answers 404. */
  get(kind: ResourceKind, namespace: string, name: string): Promise<KubeObject | null>;
  /**
   * Every object of the kind, in one namespace or (namespace undefined) in all; follows
   * `continue`. `labelSelector` (Kubernetes syntax: `key`, `key=value`) narrows it on the server.
   */
  list(kind: ResourceKind, namespace?: string, options?: ListOptions): Promise<KubeObject[]>;
  /** Creates `obj` in `namespace` (POST). Returns the stored object; KubeConflictError (reason AlreadyExists) when the name is taken. */
  createObject(kind: ResourceKind, namespace: string, obj: KubeObject): Promise<KubeObject>;
  /** Replaces `obj` (PUT) under its metadata.resourceVersion; KubeConflictError when it is stale. Returns the stored object. */
  replaceObject(kind: ResourceKind, obj: KubeObject): Promise<KubeObject>;
  /**
   * DELETE: `deleted` (gone at once), `terminating` (finalizers keep it, marked for deletion) or
   * `not found` (404). A `uid` precondition that no longer holds (the object was replaced by
   * another of that name) is a KubeConflictError.
   */
  deleteObject(kind: ResourceKind, namespace: string, name: string, preconditions?: { uid?: string }): Promise<'deleted' | 'terminating' | 'not found'>;
  /** Merge-patches the status subresource. Returns the updated object. */
  patchStatus(kind: ResourceKind, obj: KubeObject, status: Record<string, unknown>): Promise<KubeObject>;
  /** Ensures `finalizer` is present; re-reads and retries on 409. Returns the current object. */
  addFinalizer(kind: ResourceKind, obj: KubeObject, finalizer: string): Promise<KubeObject>;
  /** Ensures `finalizer` is absent; returns the current object, or null if it is gone. */
  removeFinalizer(kind: ResourceKind, obj: KubeObject, finalizer: string): Promise<KubeObject | null>;
  /**
   * Says (type, reason, message) about `obj` in a Kubernetes Event: one Event object per
   * distinct (object, type, reason, message), created the first time and counted up (count,
   * lastTimestamp) on repeats (lib/kube/events.ts). The message is made one line, masked of
   * secrets and cut to the API's limit.
   */
  recordEvent(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<{ name: string; count: number }>;
  /** The user name the API server knows us by (SelfSubjectReview). */
  whoAmI(): Promise<string>;
  /** Resolves when the API server answers a one-item list of the kind; for /readyz. */
  ping(kind: ResourceKind, namespace?: string): Promise<void>;
}

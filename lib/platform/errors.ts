/**
 * Error classes, one per failure kind.
 *
 * Contract: every error thrown by lib/ is a ReconcilerError with a stable `code`,
 * an optional `cause` and a `context` of plain values. Messages and context never
 * contain secrets (tokens, gateway keys): callers pass only ids, URLs without
 * credentials, status codes and remote error messages. Whether an error is retried
 * is decided by lib/engine/error-policy.ts, not here.
 */

export type ErrorContext = Record<string, string | number | boolean | undefined>;

abstract class ReconcilerError extends Error {
  abstract readonly code: string;
  readonly context: ErrorContext;

  constructor(message: string, options: { cause?: unknown; context?: ErrorContext } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.context = options.context ?? {};
  }
}

/**
 * Settings in the environment are missing or malformed. One problem per setting; the message
 * has one line per problem, each naming the setting (never its value when it is a secret).
 */
export class ConfigError extends ReconcilerError {
  readonly code = 'CONFIG_INVALID';
  readonly problems: readonly { setting: string; message: string }[];
  constructor(problems: { setting: string; message: string }[]) {
    super(problems.map((p) => `${p.setting}: ${p.message}`).join('\n'), { context: { settings: problems.map((p) => p.setting).join(',') } });
    this.problems = problems;
  }
}

/** A failure that is an HTTP answer (of the API server or the gateway): its status is kept, and in the context. */
abstract class AnswerError extends ReconcilerError {
  constructor(
    readonly status: number,
    message: string,
    options: { cause?: unknown; context?: ErrorContext } = {},
  ) {
    super(message, { ...options, context: { status, ...options.context } });
  }
}

/** The Kubernetes API server answered with an error status. */
export class KubeApiError extends AnswerError {
  readonly code: string = 'KUBE_API_ERROR';
}

/** A write asked of a preview of the API server (lib/kube/overlay.ts): a bug, never a change to the cluster. */
export class OverlayWriteError extends ReconcilerError {
  readonly code = 'OVERLAY_WRITE';
  constructor(what: string) {
    super(`${what}: refused, this is a preview (nothing is written to the API server)`, { context: { what } });
  }
}

/** The API server refused a write because the object changed (409). Re-read and retry. */
export class KubeConflictError extends KubeApiError {
  override readonly code = 'KUBE_CONFLICT';
}

/** The API server could not be reached, or did not answer in time. */
export class KubeUnavailableError extends ReconcilerError {
  readonly code = 'KUBE_UNAVAILABLE';
}

/** The gateway answered with an error status other than a validation error. */
export class GatewayApiError extends AnswerError {
  readonly code = 'GATEWAY_API_ERROR';
}

/** The gateway rejected what we sent as invalid (400). Retrying the same spec cannot help. */
export class GatewayRejectedError extends AnswerError {
  readonly code = 'GATEWAY_REJECTED';
}

/**
 * The gateway does not offer what the object needs: a route it lacks (Tyk Gateway 3.1 answers
 * `/tyk/policies` with Go's plain-text `404 page not found`), or one its configuration turns
 * off (a gateway whose policies come from a Dashboard refuses policy writes). Retrying the same
 * gateway cannot help until it is upgraded or reconfigured; other kinds on it keep working.
 */
export class GatewayUnsupportedError extends AnswerError {
  readonly code = 'GATEWAY_UNSUPPORTED';
}

/** The gateway could not be reached, dropped the connection, or did not answer in time. */
export class GatewayUnavailableError extends ReconcilerError {
  readonly code = 'GATEWAY_UNAVAILABLE';
}

/**
 * The gateway's answer was longer than GATEWAY_MAX_RESPONSE_BYTES: refused, the rest not read.
 * A gateway failure like any other (retried with backoff); only the objects sent to it wait.
 */
export class GatewayResponseTooLargeError extends ReconcilerError {
  readonly code = 'GATEWAY_RESPONSE_TOO_LARGE';
}

/** The custom resource cannot be turned into a gateway object (our own validation). */
export class InvalidSpecError extends ReconcilerError {
  readonly code = 'INVALID_SPEC';
}

/**
 * A gateway object is refused before any write because of who owns it (lib/engine/owners.ts):
 * ID_CLAIMED, another resource owns its id (also when a concurrent run claimed it first);
 * ADOPTION_NOT_PERMITTED, the gateway has it, no resource owns it, and it may not be adopted;
 * LISTEN_PATH_CLASH, an older resource serves the same domain and listen path.
 */
export class OwnershipError extends ReconcilerError {
  constructor(
    readonly code: 'ID_CLAIMED' | 'ADOPTION_NOT_PERMITTED' | 'LISTEN_PATH_CLASH',
    message: string,
  ) {
    super(message);
  }
}

/**
 * An Ingress of our class cannot (yet) become ApiDefinitions: INGRESS_TEMPLATE, its template is
 * missing or not labelled `template: "true"` (it waits); INGRESS_INVALID, a path or the Ingress
 * cannot be turned into one (a named service port, a resource backend, a name too long);
 * INGRESS_NAME_TAKEN, the ApiDefinition name a path needs belongs to something else.
 */
export class IngressError extends ReconcilerError {
  constructor(
    readonly code: 'INGRESS_TEMPLATE' | 'INGRESS_INVALID' | 'INGRESS_NAME_TAKEN',
    message: string,
    options: { cause?: unknown; context?: ErrorContext } = {},
  ) {
    super(message, options);
  }
}

/**
 * An HTTPRoute that cannot be served as asked: ROUTE_UNSUPPORTED, a match or filter Tyk cannot
 * carry out (the route is then not served at all); ROUTE_BACKEND, a backendRef that does not
 * resolve; ROUTE_NAME_TAKEN, the ApiDefinition name a rule needs belongs to something else.
 */
export class RouteError extends ReconcilerError {
  constructor(
    readonly code: 'ROUTE_UNSUPPORTED' | 'ROUTE_BACKEND' | 'ROUTE_NAME_TAKEN',
    message: string,
    options: { cause?: unknown; context?: ErrorContext } = {},
  ) {
    super(message, options);
  }
}

/** The record and lock store (Redis) could not be reached or failed. */
export class StoreUnavailableError extends ReconcilerError {
  readonly code = 'STORE_UNAVAILABLE';
}

/** The process is stopping (SIGTERM) and starts no new run. Maps to 503: the sender retries elsewhere or later. */
export class ShuttingDownError extends ReconcilerError {
  readonly code = 'SHUTTING_DOWN';
  constructor() {
    super('shutting down: no new runs are started; retry later');
  }
}

/** A request to one of our endpoints was malformed. Maps to a 4xx. */
export class BadRequestError extends ReconcilerError {
  readonly code: string = 'BAD_REQUEST';
  constructor(
    message: string,
    readonly statusCode = 400,
    options: { cause?: unknown; context?: ErrorContext } = {},
  ) {
    super(message, options);
  }
}

/**
 * A shard message (an SQS message body, or a POST /shards body) is not one the coordinator
 * sends: not JSON, another version, a field missing or out of range. Maps to 400; on SQS the
 * message is reported failed and ends in the dead-letter queue. The message never quotes the body.
 */
export class ShardMessageError extends BadRequestError {
  override readonly code = 'SHARD_MESSAGE_INVALID';
}

/** POST /schedule while a tick that endpoint started in this process is still running. Maps to 409; the next schedule tries again. */
export class TickRunningError extends BadRequestError {
  override readonly code = 'TICK_RUNNING';
  constructor() {
    super('a scheduled tick started here is still running; this one is skipped', 409);
  }
}

/** Some shards of a full run could not be handed to the queue (SHARD_QUEUE_URL) after retries; the next tick sends them again. */
export class ShardQueueError extends ReconcilerError {
  readonly code = 'SHARD_QUEUE_UNAVAILABLE';
}

/** A request to one of our endpoints lacked a valid bearer token. Maps to 401. */
export class UnauthorizedError extends ReconcilerError {
  readonly code = 'UNAUTHORIZED';
}

/** A source sent more webhook requests than WEBHOOK_RATE_LIMIT allows. Maps to 429. */
export class RateLimitedError extends ReconcilerError {
  readonly code = 'RATE_LIMITED';
  constructor(readonly retryAfterMs: number) {
    super(`too many requests from this source; retry in ${Math.ceil(retryAfterMs / 1000)} s (WEBHOOK_RATE_LIMIT)`);
  }
}

/** One line for logs, reports and statuses: the message and, if present, the cause's message. */
export function describeError(err: unknown): string {
  if (err instanceof Error) {
    const cause = err.cause instanceof Error && !err.message.includes(err.cause.message) ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}

export function errorCode(err: unknown): string {
  return err instanceof ReconcilerError ? err.code : 'INTERNAL';
}

/**
 * What the two Tyk fakes (the gateway and the Dashboard) share: the loopback
 * server, the request intake (URL, body, the call log), fault injection and
 * how a reply goes out. Each fake adds its routes (`handle`) and its error
 * body (`errorReply`, also used for an injected `status` without a `body`).
 *
 * And Go's decoding of a body: Tyk's structs' zero values (the fields Go fills
 * in when it decodes, then encodes, a definition or a policy), which fields a
 * body may not give another JSON type, and a stored object merged over them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import { FaultBook, type FaultHandle, type FaultSpec, withholdResponse } from './faults.js';
import { CallLog, cloneJson as clone, isWriteTo, readBody, setBody } from './http-plumbing.js';

export interface CallRecord {
  method: string;
  /** The URL pathname. */
  path: string;
  query: Record<string, string>;
  /** The request body, parsed as JSON when it is JSON, else the text; absent when empty. */
  body?: unknown;
  /** 0 while unanswered, and for dropped or hung calls. */
  status: number;
}

export interface Reply {
  status: number;
  body: unknown;
  raw?: boolean;
  headers?: Record<string, string>;
}

/** An answer with a JSON body. */
export function reply(status: number, body: unknown): Reply {
  return { status, body };
}

/** The Tyk Gateway's error answer (ApiStatusMessage): `{"status":"error","message":...}`. */
export function gatewayError(status: number, message: string): Reply {
  return reply(status, { status: 'error', message });
}

/** The Tyk Dashboard's error answer (ApiResponse): `{"Status":"Error","Message":...,"Meta":null}`. */
export function dashboardError(status: number, message: string): Reply {
  return reply(status, { Status: 'Error', Message: message, Meta: null });
}

/** A certificate and key (PEM) a fake serves HTTPS with. */
export interface ServedTls {
  cert: string;
  key: string;
}

export abstract class TykFakeBase {
  readonly server: Server | TlsServer;
  readonly callLog = new CallLog<CallRecord>();
  private readonly faults = new FaultBook<CallRecord>();
  private readonly sleepTimers = new Set<NodeJS.Timeout>();
  private readonly hung = new Set<ServerResponse>();
  private readonly isWrite: (call: CallRecord) => boolean;
  private writesInFlight = 0;
  private peakWrites = 0;
  private closed = false;

  /**
   * @param origin the base for parsing request URLs
   * @param writePath the pathnames whose POST, PUT and DELETE `writes()` counts
   * @param tls a certificate and key: served over HTTPS with them
   */
  protected constructor(
    private readonly origin: string,
    writePath: RegExp,
    tls?: ServedTls,
  ) {
    this.isWrite = isWriteTo(writePath);
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.onRequest(req, res);
    this.server = tls ? createTlsServer({ cert: tls.cert, key: tls.key }, handler) : createServer(handler);
  }

  /** The fake's answer to a request no fault answered. */
  protected abstract handle(req: IncomingMessage, url: URL, method: string, raw: string): Reply | Promise<Reply>;

  /** The fake's error reply for `status`. */
  protected abstract errorReply(status: number, message: string): Reply;

  // --- faults and calls ----------------------------------------------------

  inject(spec: FaultSpec<CallRecord>): FaultHandle {
    return this.faults.inject(spec);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  count(method?: string, path?: RegExp | string): number {
    return this.callLog.count(method, path);
  }

  writes(): number {
    return this.callLog.writes(this.isWrite);
  }

  // --- HTTP ----------------------------------------------------------------

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.receive(req, res).catch((err: unknown) => {
      if (!res.headersSent && !res.destroyed) res.writeHead(500).end(String(err));
    });
  }

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.origin);
    const raw = await readBody(req);
    const call: CallRecord = {
      method: (req.method ?? 'GET').toUpperCase(),
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      status: 0,
    };
    setBody(call, raw);
    this.callLog.push(call);
    const write = this.isWrite(call);
    if (write) this.peakWrites = Math.max(this.peakWrites, ++this.writesInFlight);
    try {
      const fault = this.faults.take(call);
      if (fault && (await this.applyFault(req, res, call, fault))) return;
      this.send(res, call, await this.handle(req, url, call.method, raw));
    } finally {
      if (write) this.writesInFlight--;
    }
  }

  /** The most writes this fake was answering at once (since the start, or the last resetPeak). */
  peakConcurrentWrites(): number {
    return this.peakWrites;
  }

  resetPeak(): void {
    this.peakWrites = this.writesInFlight;
  }

  /** Returns true when the fault answered (or withheld) the response. */
  private async applyFault(req: IncomingMessage, res: ServerResponse, call: CallRecord, f: FaultSpec<CallRecord>): Promise<boolean> {
    const transport = { req, res, delay: (ms: number) => this.sleep(ms), closed: () => this.closed, hung: this.hung };
    if (await withholdResponse(f, transport)) return true;
    if (f.status === undefined) return false;
    const headers = f.headers ?? {};
    const r: Reply = f.body === undefined ? { ...this.errorReply(f.status, 'injected fault'), headers } : { status: f.status, body: f.body, raw: typeof f.body === 'string', headers };
    this.send(res, call, r);
    return true;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleepTimers.delete(timer);
        resolve();
      }, ms);
      this.sleepTimers.add(timer);
    });
  }

  private send(res: ServerResponse, call: CallRecord, r: Reply): void {
    if (res.headersSent || res.destroyed) return;
    call.status = r.status;
    const text = r.raw ? String(r.body) : JSON.stringify(r.body);
    const length = String(Buffer.byteLength(text));
    res.writeHead(r.status, { 'Content-Type': 'application/json', ...r.headers, 'Content-Length': length });
    res.end(text);
  }

  /** Ends the pending waits, hung responses and connections, then closes the server. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
    for (const t of this.sleepTimers) clearTimeout(t);
    this.sleepTimers.clear();
    for (const res of this.hung) res.socket?.destroy();
    this.hung.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Called once, first thing in `close`. */
  protected onClose(): void {}
}

// ---------------------------------------------------------------------------
// Go decoding: the models' zero values (Go's json.Marshal of an empty struct,
// fields in the structs' order), and the merge and type checks over them.

export type Json = null | boolean | number | string | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

const SERVICE_DISCOVERY: JsonObject = {
  use_discovery_service: false,
  query_endpoint: '',
  use_nested_query: false,
  parent_data_path: '',
  data_path: '',
  port_data_path: '',
  target_path: '',
  use_target_list: false,
  cache_disabled: false,
  cache_timeout: 0,
  endpoint_returns_list: false,
};

export const AUTH_CONFIG: JsonObject = {
  name: '',
  use_param: false,
  param_name: '',
  use_cookie: false,
  cookie_name: '',
  disable_header: false,
  auth_header_name: '',
  use_certificate: false,
  validate_signature: false,
  signature: {
    algorithm: '',
    header: '',
    use_param: false,
    param_name: '',
    secret: '',
    allowed_clock_skew: 0,
    error_code: 0,
    error_message: '',
  },
};

const MIDDLEWARE_DEFINITION: JsonObject = {
  disabled: false,
  name: '',
  path: '',
  require_session: false,
  raw_body_only: false,
};

export const VERSION_INFO: JsonObject = {
  name: '',
  expires: '',
  paths: { ignored: null, white_list: null, black_list: null },
  use_extended_paths: false,
  extended_paths: {},
  global_headers: null,
  global_headers_remove: null,
  global_headers_disabled: false,
  global_response_headers: null,
  global_response_headers_remove: null,
  global_response_headers_disabled: false,
  ignore_endpoint_case: false,
  global_size_limit: 0,
  override_target: '',
};

const GRAPHQL: JsonObject = {
  enabled: false,
  execution_mode: '',
  version: '',
  schema: '',
  last_schema_update: '',
  type_field_configurations: null,
  playground: { enabled: false, path: '' },
  engine: { field_configs: null, data_sources: null, global_headers: null },
  proxy: {
    features: { use_immutable_headers: false },
    auth_headers: null,
    subscription_type: '',
    request_headers: null,
    use_response_extensions: { on_error_forwarding: false },
    request_headers_rewrite: null,
  },
  subgraph: { sdl: '' },
  supergraph: {
    subgraphs: null,
    merged_sdl: '',
    global_headers: null,
    disable_query_batching: false,
    updated_at: '',
  },
  introspection: { disabled: false },
};

export const API_DEFINITION: JsonObject = {
  id: '',
  name: '',
  expiration: '',
  slug: '',
  listen_port: 0,
  protocol: '',
  enable_proxy_protocol: false,
  api_id: '',
  org_id: '',
  use_keyless: false,
  use_oauth2: false,
  external_oauth: { enabled: false, providers: null },
  use_openid: false,
  openid_options: { providers: null, segregate_by_client: false },
  oauth_meta: { allowed_access_types: null, allowed_authorize_types: null, auth_login_redirect: '' },
  auth: AUTH_CONFIG,
  auth_configs: null,
  use_basic_auth: false,
  basic_auth: {
    disable_caching: false,
    cache_ttl: 0,
    extract_from_body: false,
    body_user_regexp: '',
    body_password_regexp: '',
  },
  use_mutual_tls_auth: false,
  client_certificates: null,
  upstream_certificates: null,
  upstream_certificates_disabled: false,
  pinned_public_keys: null,
  certificate_pinning_disabled: false,
  enable_jwt: false,
  use_standard_auth: false,
  use_go_plugin_auth: false,
  enable_coprocess_auth: false,
  custom_plugin_auth_enabled: false,
  jwt_signing_method: '',
  jwt_source: '',
  jwt_identity_base_field: '',
  jwt_client_base_field: '',
  jwt_policy_field_name: '',
  jwt_default_policies: null,
  jwt_issued_at_validation_skew: 0,
  jwt_expires_at_validation_skew: 0,
  jwt_not_before_validation_skew: 0,
  jwt_skip_kid: false,
  scopes: {
    jwt: { scope_claim_name: '', scope_to_policy: null },
    oidc: { scope_claim_name: '', scope_to_policy: null },
  },
  jwt_scope_to_policy_mapping: null,
  jwt_scope_claim_name: '',
  idp_client_id_mapping_disabled: false,
  notifications: { shared_secret: '', oauth_on_keychange_url: '' },
  enable_signature_checking: false,
  hmac_allowed_clock_skew: 0,
  hmac_allowed_algorithms: null,
  request_signing: {
    is_enabled: false,
    secret: '',
    key_id: '',
    algorithm: '',
    header_list: null,
    certificate_id: '',
    signature_header: '',
  },
  base_identity_provided_by: '',
  definition: {
    enabled: false,
    name: '',
    default: '',
    location: '',
    key: '',
    strip_path: false,
    strip_versioning_data: false,
    url_versioning_pattern: '',
    fallback_to_default: false,
    versions: null,
  },
  version_data: { not_versioned: false, default_version: '', versions: null },
  uptime_tests: {
    check_list: null,
    config: { expire_utime_after: 0, service_discovery: SERVICE_DISCOVERY, recheck_wait: 0 },
  },
  proxy: {
    preserve_host_header: false,
    listen_path: '',
    target_url: '',
    disable_strip_slash: false,
    strip_listen_path: false,
    enable_load_balancing: false,
    target_list: null,
    check_host_against_uptime_tests: false,
    service_discovery: SERVICE_DISCOVERY,
    transport: {
      ssl_insecure_skip_verify: false,
      ssl_ciphers: null,
      ssl_min_version: 0,
      ssl_max_version: 0,
      ssl_force_common_name_check: false,
      proxy_url: '',
    },
  },
  disable_rate_limit: false,
  disable_quota: false,
  custom_middleware: {
    pre: null,
    post: null,
    post_key_auth: null,
    auth_check: MIDDLEWARE_DEFINITION,
    response: null,
    driver: '',
    id_extractor: { disabled: false, extract_from: '', extract_with: '', extractor_config: null },
  },
  custom_middleware_bundle: '',
  custom_middleware_bundle_disabled: false,
  cache_options: {
    cache_timeout: 0,
    enable_cache: false,
    cache_all_safe_requests: false,
    cache_response_codes: null,
    enable_upstream_cache_control: false,
    cache_control_ttl_header: '',
    cache_by_headers: null,
  },
  session_lifetime_respects_key_expiration: false,
  session_lifetime: 0,
  active: false,
  internal: false,
  auth_provider: { name: '', storage_engine: '', meta: null },
  session_provider: { name: '', storage_engine: '', meta: null },
  event_handlers: { events: null },
  enable_ip_whitelisting: false,
  allowed_ips: null,
  enable_ip_blacklisting: false,
  blacklisted_ips: null,
  dont_set_quota_on_create: false,
  expire_analytics_after: 0,
  response_processors: null,
  CORS: {
    enable: false,
    allowed_origins: null,
    allowed_methods: null,
    allowed_headers: null,
    exposed_headers: null,
    allow_credentials: false,
    max_age: 0,
    options_passthrough: false,
    debug: false,
  },
  domain: '',
  domain_disabled: false,
  certificates: null,
  do_not_track: false,
  enable_context_vars: false,
  config_data: null,
  config_data_disabled: false,
  tag_headers: null,
  global_rate_limit: { disabled: false, rate: 0, per: 0 },
  strip_auth_data: false,
  enable_batch_request_support: false,
  enable_detailed_recording: false,
  graphql: GRAPHQL,
  analytics_plugin: { enable: false, plugin_path: '', func_name: '' },
  tags: null,
  tags_disabled: false,
  detailed_tracing: false,
  error_overrides: null,
  error_overrides_disabled: false,
  is_oas: false,
};

const API_LIMIT: JsonObject = {
  rate: 0,
  per: 0,
  throttle_interval: 0,
  throttle_retry_limit: 0,
  max_query_depth: 0,
  quota_max: 0,
  quota_renews: 0,
  quota_remaining: 0,
  quota_renewal_rate: 0,
  smoothing: null,
};

export const ACCESS_DEFINITION: JsonObject = {
  api_name: '',
  api_id: '',
  versions: null,
  allowed_urls: null,
  restricted_types: null,
  allowed_types: null,
  disable_introspection: false,
  limit: API_LIMIT,
  field_access_rights: null,
  allowance_scope: '',
  endpoints: null,
};

export const POLICY: JsonObject = {
  _id: '',
  id: '',
  name: '',
  org_id: '',
  rate: 0,
  per: 0,
  quota_max: 0,
  quota_renewal_rate: 0,
  throttle_interval: 0,
  throttle_retry_limit: 0,
  max_query_depth: 0,
  smoothing: null,
  access_rights: null,
  graphql_access_rights: null,
  hmac_enabled: false,
  enable_http_signature_validation: false,
  active: false,
  is_inactive: false,
  tags: null,
  key_expires_in: 0,
  partitions: { quota: false, rate_limit: false, complexity: false, per_api: false, acl: false },
  last_updated: '',
  meta_data: null,
  post_expiry_action: '',
  post_expiry_grace_period: 0,
};

/** A model: its zero values, and the zero value of each entry of its struct-valued maps. */
export interface Shape {
  defaults: JsonObject;
  mapEntries: Record<string, JsonObject>;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function joinPath(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/** The object merged over the model's zero values; the top level drops unknown fields. */
function fillObject(def: JsonObject, val: JsonObject, path: string, shape: Shape): JsonObject {
  const out: JsonObject = {};
  for (const [k, d] of Object.entries(def)) out[k] = fillValue(d, val[k], joinPath(path, k), shape);
  if (path === '') return out;
  for (const [k, v] of Object.entries(val)) if (!(k in def)) out[k] = clone(v);
  return out;
}

/** JSON null over a struct or a scalar keeps the zero value; a struct-valued map fills each entry. */
function fillValue(def: Json, v: Json | undefined, path: string, shape: Shape): Json {
  if (v === undefined || v === null) return clone(def);
  const entry = shape.mapEntries[path];
  if (entry && isObject(v)) {
    const out: JsonObject = {};
    for (const [k, e] of Object.entries(v)) out[k] = isObject(e) ? fillObject(entry, e, `${path}.*`, shape) : clone(e);
    return out;
  }
  if (isObject(def) && isObject(v)) return fillObject(def, v, path, shape);
  return clone(v);
}

/** The stored object merged over the model's zero values, as Go decodes then encodes it. */
export function fillModel(shape: Shape, val: JsonObject): JsonObject {
  return fillObject(shape.defaults, val, '', shape);
}

/** Whether Go's decoder would refuse v for a field whose zero value is def. */
function typeMismatch(def: Json, v: Json | undefined, path: string, shape: Shape): boolean {
  if (v === undefined || v === null) return false;
  const entry = shape.mapEntries[path];
  if (entry) return !isObject(v) || Object.values(v).some((e) => typeMismatch(entry, e, `${path}.*`, shape));
  if (def === null) return false; // lists and free-form maps: not checked
  if (isObject(def)) return !isObject(v) || objectMismatch(def, v, path, shape);
  return typeof v !== typeof def;
}

function objectMismatch(def: JsonObject, v: JsonObject, path: string, shape: Shape): boolean {
  return Object.entries(v).some(([k, e]) => k in def && typeMismatch(def[k] ?? null, e, joinPath(path, k), shape));
}

/** Whether Go's decoder would refuse this body for the model (a known field of another JSON type). */
export function modelMismatch(shape: Shape, body: JsonObject): boolean {
  return objectMismatch(shape.defaults, body, '', shape);
}

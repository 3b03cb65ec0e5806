/**
 * Inputs for the benchmark: a realistic ApiDefinition (~2 KB once built into a Tyk body, shaped
 * like Tyk Operator's samples: auth token, CORS, rate limit, a versioned API with URL rewrites
 * and header transforms) and a realistic mix of plan() inputs.
 */

import type { DesiredState, ObservedState } from '../lib/engine/plan.js';
import type { KubeObject } from '../lib/kube/types.js';
import type { SyncRecord } from '../lib/store/types.js';

/** A spec like /work/shared/reference/samples (jwt-auth, looping/dynamic_auth, httpbin_protected). */
export function apiSpec(namespace: string, name: string, i: number): Record<string, unknown> {
  return {
    name: `${name} (${namespace})`,
    protocol: 'http',
    active: true,
    use_standard_auth: true,
    auth_configs: { authToken: { auth_header_name: 'Authorization' } },
    strip_auth_data: true,
    proxy: {
      target_url: `http://${name}.${namespace}.svc.cluster.local:8000`,
      listen_path: `/${namespace}/${name}`,
      strip_listen_path: true,
    },
    CORS: {
      enable: true,
      allowed_origins: ['https://app.example.com', 'https://admin.example.com'],
      allowed_methods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
      allowed_headers: ['Authorization', 'Content-Type', 'X-Request-Id'],
      allow_credentials: true,
      max_age: 600,
    },
    global_rate_limit: { rate: 100 + (i % 50), per: 60 },
    tags: [`team-${namespace}`, `tier-${i % 3}`],
    enable_ip_whitelisting: true,
    allowed_ips: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'],
    cache_options: { enable_cache: true, cache_timeout: 60, cache_all_safe_requests: true, cache_response_codes: [200, 204] },
    config_data: { owner: `${namespace}@example.com`, cost_center: `cc-${i % 97}`, environment: 'production' },
    version_data: {
      default_version: 'Default',
      not_versioned: true,
      versions: {
        Default: {
          name: 'Default',
          use_extended_paths: true,
          global_headers: { 'x-api-name': name, 'x-team': namespace },
          extended_paths: {
            url_rewrites: [
              { path: '/{id}', match_pattern: '/basic/(.*)', method: 'GET', rewrite_to: `/v2/${name}/$1` },
              { path: '/legacy/{id}', match_pattern: '/legacy/(.*)', method: 'POST', rewrite_to: '/v1/$1' },
            ],
            transform_headers: [
              { path: '/{id}', method: 'GET', add_headers: { 'x-transform-api': 'basic-auth' }, delete_headers: ['x-internal'] },
              { path: '/orders/{id}', method: 'PUT', add_headers: { 'x-request-source': 'gateway' }, delete_headers: ['cookie'] },
            ],
            hard_timeouts: [{ path: '/slow', method: 'GET', timeout: 30 }],
            ignored: [{ path: '/health', method_actions: { GET: { action: 'no_action', code: 200, data: '', headers: {} } } }],
          },
        },
      },
    },
  };
}

export function apiDefinition(namespace: string, name: string, i: number): KubeObject {
  return { apiVersion: 'tyk.tyk.io/v1alpha1', kind: 'ApiDefinition', metadata: { namespace, name }, spec: apiSpec(namespace, name, i) };
}

export type PlanInput = [DesiredState | undefined, ObservedState | undefined, SyncRecord | undefined];

/**
 * 1,000 plan() inputs in proportions a scheduled run sees: mostly unchanged, then spec changes,
 * drift, missing on the gateway, new objects, deletions, invalid specs, retries.
 */
export function planInputs(): PlanInput[] {
  const mix: [number, (i: number) => PlanInput][] = [
    [850, (i) => [desired(i), observed(i, 'o'), record(i, 'd', 'o')]], // unchanged
    [40, (i) => [desired(i, 'd2'), observed(i, 'o'), record(i, 'd', 'o')]], // spec changed
    [30, (i) => [desired(i), observed(i, 'o2'), record(i, 'd', 'o')]], // drifted on gateway
    [20, (i) => [desired(i), undefined, record(i, 'd', 'o')]], // missing on gateway
    [20, (i) => [desired(i), undefined, undefined]], // created in cluster
    [10, (i) => [desired(i), observed(i, 'o'), undefined]], // adopted from gateway
    [10, (i) => [undefined, observed(i, 'o'), record(i, 'd', 'o')]], // deleted in cluster
    [10, (i) => [{ ...desired(i), deleting: true }, observed(i, 'o'), record(i, 'd', 'o')]], // being deleted
    [5, (i) => [{ ...desired(i), invalid: 'unsupported' }, undefined, { ...record(i, 'd', ''), result: 'invalid' }]],
    [5, (i) => [desired(i), observed(i, 'o'), { ...record(i, 'd', 'o'), result: 'failed', failures: 1 }]],
  ];
  const out: PlanInput[] = [];
  for (const [count, make] of mix) for (let k = 0; k < count; k++) out.push(make(out.length));
  return out;
}

function desired(i: number, hash = 'd'): DesiredState {
  return { id: `id-${i}`, hash: `${hash}-${i}`, generation: 1, deleting: false, hasFinalizer: true };
}

function observed(i: number, hash: string): ObservedState {
  return { id: `id-${i}`, hash: `${hash}-${i}` };
}

function record(i: number, desiredHash: string, observedHash: string): SyncRecord {
  return {
    key: `default/ApiDefinition/ns/api-${i}`,
    id: `id-${i}`,
    generation: 1,
    desiredHash: `${desiredHash}-${i}`,
    observedHash: observedHash === '' ? '' : `${observedHash}-${i}`,
    result: 'synced',
    failures: 0,
    time: '2026-01-01T00:00:00.000Z',
  };
}

/**
 * What a gateway serves, read for the export: its Tyk Classic APIs, its Tyk OAS APIs and its
 * policies, one list each through the Gateway interface (lib/gateway: the Tyk Gateway's
 * /tyk/apis, /tyk/apis/oas, /tyk/policies; the Dashboard's /api/apis, /api/apis/oas,
 * /api/portal/policies). A progress line goes to `progress` before each list and after it with
 * the count. A gateway that lacks the OAS or the policy API (GatewayUnsupportedError: Tyk
 * Gateway 3.1) has none of them: said in `lacking`, not a failure. Any other failure throws.
 */

import type { Gateway, GatewayObjectKind, JsonObject } from '../gateway/types.js';
import { GatewayUnsupportedError } from '../platform/errors.js';
import type { GatewayContents } from './translate.js';

export interface GatewayRead {
  readonly contents: GatewayContents;
  /** what the gateway has no API for, and why (one line each) */
  readonly lacking: readonly string[];
}

const WHAT: Readonly<Record<'api' | 'oas' | 'policy', string>> = { api: 'Tyk Classic APIs', oas: 'Tyk OAS APIs', policy: 'policies' };

export async function readGateway(gateway: Pick<Gateway, 'list'>, progress: (line: string) => void): Promise<GatewayRead> {
  const lacking: string[] = [];
  const read = async (kind: Extract<GatewayObjectKind, 'api' | 'oas' | 'policy'>, optional: boolean): Promise<Map<string, JsonObject>> => {
    progress(`reading ${WHAT[kind]}…`);
    try {
      const listed = await gateway.list(kind);
      progress(`read ${listed.size} ${WHAT[kind]}`);
      return listed;
    } catch (err) {
      if (!optional || !(err instanceof GatewayUnsupportedError)) throw err;
      lacking.push(`no ${WHAT[kind]} exported: ${err.message}`);
      return new Map();
    }
  };
  const apis = await read('api', false);
  const oas = await read('oas', true);
  const policies = await read('policy', true);
  return { contents: { apis, oas, policies }, lacking };
}

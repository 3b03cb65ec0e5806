/**
 * Which URLs an OperatorContext may send a gateway credential to (CONTEXT_URL_ALLOW).
 *
 * Contract (CONTEXT_URL_ALLOW's entries and the URL's shape: ./url-allow.ts):
 * - `UrlPolicy.refusal(url)`: the shape, then the host: named by an allow entry (by name, or by
 *   one of its addresses in an allowed CIDR), it is permitted; with CONTEXT_URL_ALLOW set, any
 *   other host is refused; without it, a host that is (or resolves to) a loopback, link-local or
 *   unspecified address is refused, any other permitted. Names are resolved with the injected
 *   resolver; a name that does not resolve is refused (nothing would be connected to anyway).
 * - `UrlPolicy.lookup`: the same address check on the connect path, as a `net` lookup function
 *   given to the gateway client's agent: every connection a context's client opens re-resolves
 *   its host and refuses a forbidden address before connecting, so a DNS answer that changes
 *   after the check (rebinding) cannot reach a forbidden address.
 * Messages never quote the URL (it may come from a Secret the reader cannot see).
 */
import { lookup as dnsLookup } from 'node:dns';
import { BlockList, type LookupFunction } from 'node:net';
import { type AllowEntry, bare, familyOf, urlShapeRefusal } from './url-allow.js';

export { parseUrlAllow, urlShapeRefusal } from './url-allow.js';

/** One resolved address. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (default: the system resolver, as connections do). */
export type Resolve = (host: string) => Promise<ResolvedAddress[]>;

export const systemResolve: Resolve = (host) =>
  new Promise((resolve, reject) => {
    dnsLookup(host, { all: true }, (err, addresses) => {
      if (err) reject(err);
      else resolve(addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 })));
    });
  });

/** Loopback, link-local and unspecified addresses, IPv4 and IPv6 (IPv4-mapped IPv6 included). */
const FORBIDDEN = new BlockList();
FORBIDDEN.addSubnet('127.0.0.0', 8, 'ipv4');
FORBIDDEN.addSubnet('169.254.0.0', 16, 'ipv4');
FORBIDDEN.addAddress('0.0.0.0', 'ipv4');
FORBIDDEN.addAddress('::1', 'ipv6');
FORBIDDEN.addAddress('::', 'ipv6');
FORBIDDEN.addSubnet('fe80::', 10, 'ipv6');
FORBIDDEN.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');
FORBIDDEN.addSubnet('::ffff:169.254.0.0', 112, 'ipv6');
FORBIDDEN.addAddress('::ffff:0.0.0.0', 'ipv6');

/** A loopback, link-local or unspecified address. */
export function isForbiddenAddress(address: string): boolean {
  const family = familyOf(address);
  return family !== undefined && FORBIDDEN.check(address, family);
}

function defaultPort(u: URL): number {
  if (u.port !== '') return Number(u.port);
  return u.protocol === 'https:' ? 443 : 80;
}

export class UrlPolicy {
  constructor(
    /** CONTEXT_URL_ALLOW; undefined: not set */
    private readonly allow: readonly AllowEntry[] | undefined,
    private readonly resolve: Resolve = systemResolve,
  ) {}

  /** Whether an entry names this host (by name, or by an address in its CIDR) and port. */
  private allowed(host: string, port: number, addresses: readonly string[]): boolean {
    return (this.allow ?? []).some((e) =>
      'cidr' in e
        ? addresses.length > 0 &&
          addresses.every((a) => {
            const f = familyOf(a);
            return f !== undefined && e.blocks.check(a, f);
          })
        : e.host === host && (e.port === undefined || e.port === port),
    );
  }

  /** Why the address a connection is about to use is refused, or undefined. */
  addressRefusal(host: string, port: number, address: string): string | undefined {
    if (this.allowed(bare(host), port, [address])) return undefined;
    if (this.allow !== undefined) return 'its host is not named by CONTEXT_URL_ALLOW';
    return isForbiddenAddress(address) ? 'its host is a loopback, link-local or unspecified address, which CONTEXT_URL_ALLOW does not name' : undefined;
  }

  /** Why a context's URL is refused (no connection is made), or undefined when it is permitted. */
  async refusal(url: string): Promise<string | undefined> {
    const shape = urlShapeRefusal(url);
    if (shape) return shape;
    const u = new URL(url);
    const host = bare(u.hostname);
    const port = defaultPort(u);
    let addresses: string[];
    if (familyOf(host) !== undefined) addresses = [host];
    else {
      try {
        addresses = (await this.resolve(host)).map((a) => a.address);
      } catch {
        addresses = [];
      }
      if (addresses.length === 0 && !this.allowed(host, port, [])) return 'its host does not resolve';
    }
    if (this.allowed(host, port, addresses)) return undefined;
    if (this.allow !== undefined) return 'its host is not named by CONTEXT_URL_ALLOW';
    if (addresses.some(isForbiddenAddress)) return 'its host is (or resolves to) a loopback, link-local or unspecified address, which CONTEXT_URL_ALLOW does not name';
    return undefined;
  }

  /**
   * A `net` lookup for one context's connections: resolves with the injected resolver and
   * fails a connection to an address `addressRefusal` refuses, before it is made.
   */
  lookupFor(url: string): LookupFunction {
    const u = new URL(url);
    const port = defaultPort(u);
    return ((hostname: string, options: { all?: boolean; family?: number | string }, callback: (...args: unknown[]) => void) => {
      const literal = familyOf(bare(hostname));
      const found: Promise<ResolvedAddress[]> = literal ? Promise.resolve([{ address: bare(hostname), family: literal === 'ipv6' ? 6 : 4 }]) : this.resolve(hostname);
      found.then(
        (addresses) => {
          const refused = addresses.map((a) => this.addressRefusal(hostname, port, a.address)).find((r) => r !== undefined);
          if (addresses.length === 0 || refused !== undefined) {
            const err = Object.assign(new Error(`connection refused by CONTEXT_URL_ALLOW: ${refused ?? 'its host does not resolve'}`), { code: 'EACCES' });
            callback(err);
            return;
          }
          if (options?.all) callback(null, addresses);
          else callback(null, addresses[0]?.address, addresses[0]?.family);
        },
        (err: unknown) => callback(err),
      );
    }) as LookupFunction;
  }
}

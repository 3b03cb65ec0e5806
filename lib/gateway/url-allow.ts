/**
 * CONTEXT_URL_ALLOW's entries and the shape of an OperatorContext's URL: what the settings and
 * the resolution of a context need at once (the checks that resolve names, ./url-policy.ts,
 * are loaded on first use).
 *
 * Contract: pure.
 * - `parseUrlAllow(value)`: CONTEXT_URL_ALLOW's entries (comma-separated: a host name, an IP
 *   address, `host:port`, `[v6]:port`, or a CIDR) or one problem per bad entry.
 * - `urlShapeRefusal(url)`: a URL with userinfo, a query or a fragment (even an empty `?` or
 *   `#`) is refused, whatever CONTEXT_URL_ALLOW says.
 */
import { BlockList, isIP } from 'node:net';

/** A parsed CONTEXT_URL_ALLOW entry. */
export type AllowEntry = { host: string; port?: number } | { cidr: string; blocks: BlockList };

/** 'ipv4' or 'ipv6' for an address literal, else undefined. */
export function familyOf(address: string): 'ipv4' | 'ipv6' | undefined {
  const v = isIP(address);
  return v === 4 ? 'ipv4' : v === 6 ? 'ipv6' : undefined;
}

/** The host of a URL without IPv6 brackets, lower-cased. */
export function bare(host: string): string {
  return host.replace(/^\[|\]$/g, '').toLowerCase();
}

function parseEntry(entry: string): AllowEntry | string {
  const slash = entry.indexOf('/');
  if (slash >= 0) {
    const address = entry.slice(0, slash);
    const bitsText = entry.slice(slash + 1);
    const family = familyOf(address);
    const bits = Number(bitsText);
    const max = family === 'ipv6' ? 128 : 32;
    if (!family || !/^\d{1,3}$/.test(bitsText) || bits > max) return `"${entry}" is not a CIDR (address/prefix length)`;
    const blocks = new BlockList();
    blocks.addSubnet(address, bits, family);
    return { cidr: entry, blocks };
  }
  if (familyOf(entry) === 'ipv6') return { host: entry.toLowerCase() };
  let u: URL;
  try {
    u = new URL(`http://${entry}`);
  } catch {
    return `"${entry}" is not a host, host:port or CIDR`;
  }
  if (u.username || u.password || u.pathname !== '/' || u.search || u.hash || `${u.host}` === '') return `"${entry}" is not a host, host:port or CIDR`;
  const port = /:(\d+)$/.exec(entry)?.[1];
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return `"${entry}" has a port outside 1-65535`;
  return port === undefined ? { host: bare(u.hostname) } : { host: bare(u.hostname), port: Number(port) };
}

/** CONTEXT_URL_ALLOW → its entries, or the problems (one per bad entry). Undefined or blank: no list. */
export function parseUrlAllow(value: string | undefined): { entries?: AllowEntry[]; problems: string[] } {
  const items = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) return { problems: [] };
  const entries: AllowEntry[] = [];
  const problems: string[] = [];
  for (const item of items) {
    const parsed = parseEntry(item);
    if (typeof parsed === 'string') problems.push(parsed);
    else entries.push(parsed);
  }
  return { entries, problems };
}

/** Refuses a URL with userinfo, a query or a fragment (empty ones too); undefined when its shape is fine. */
export function urlShapeRefusal(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not a valid URL';
  }
  if (u.username !== '' || u.password !== '' || /^[a-z+.-]+:\/\/[^/?#]*@/i.test(url)) return 'must not contain user information';
  if (url.includes('?')) return 'must not have a query';
  if (url.includes('#')) return 'must not have a fragment';
  return undefined;
}

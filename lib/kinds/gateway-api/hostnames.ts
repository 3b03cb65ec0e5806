/**
 * Gateway API hostnames: whether a listener's hostname matches a host, the hostnames a route
 * serves on a listener (the intersection the Gateway API defines), and a hostname as Tyk's
 * `domain`. Pure: no I/O, no clock.
 *
 * - A wildcard `*.example.com` matches one OR MORE labels before `.example.com`
 *   (`foo.bar.example.com` too), never `example.com` itself.
 * - Hostnames compare without regard to case (DNS names).
 * - Intersection: the more specific hostname of each matching pair is what is served.
 * - Tyk's `domain` is a gorilla/mux host template: the wildcard becomes `{?:.+}` (one or more
 *   labels), a pattern Tyk honours only with `enable_custom_domains` on.
 */

function isWildcard(host: string): boolean {
  return host.startsWith('*.');
}

/** Whether `host` (a route hostname or a request host, possibly `*.x`) is matched by listener hostname `listener` (undefined: any). */
export function hostnameMatches(listener: string | undefined, host: string): boolean {
  if (listener === undefined) return true;
  const l = listener.toLowerCase();
  const h = host.toLowerCase();
  if (l === h) return true;
  if (!isWildcard(l)) return false;
  const suffix = l.slice(1); // ".example.com"
  return h.length > suffix.length && h.endsWith(suffix) && !h.startsWith('.');
}

/** Of two hostnames that match each other, the more specific (a name over a wildcard, the longer wildcard over the shorter). */
function moreSpecific(a: string, b: string): string {
  if (isWildcard(a) !== isWildcard(b)) return isWildcard(a) ? b : a;
  return b.length > a.length ? b : a;
}

/**
 * The hostnames a route serves on a listener (Gateway API's intersection): undefined when they
 * do not intersect (both set and no route hostname matches); [] when both are unset (any host);
 * otherwise the more specific of each matching pair, deduplicated, in the route's order.
 */
export function intersectHostnames(listener: string | undefined, route: readonly string[]): string[] | undefined {
  if (route.length === 0) return listener === undefined ? [] : [listener];
  const out: string[] = [];
  const seen = new Set<string>();
  for (const r of route) {
    let served: string | undefined;
    if (hostnameMatches(listener, r)) served = listener === undefined ? r : moreSpecific(listener, r);
    else if (listener !== undefined && hostnameMatches(r, listener)) served = moreSpecific(listener, r);
    if (served === undefined) continue;
    const key = served.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(served);
  }
  return out.length === 0 ? undefined : out;
}

/** A hostname as Tyk's `domain`: `*.example.com` → a pattern matching one or more labels before `.example.com`. */
export function tykDomain(host: string): string {
  return isWildcard(host) ? `{?:.+}${host.slice(1)}` : host;
}

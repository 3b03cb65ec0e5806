/**
 * How a setting names a gateway's Service (TYK_GATEWAY_SERVICE, an OperatorContext's
 * `spec.env.service`): `<namespace>/<name>[:<port>]`, read without loading the discovery
 * (./endpoint-slices.ts), which only a process that has such a gateway loads. Pure.
 */

/** TYK_GATEWAY_SERVICE: the gateway's Service, and which of its ports (a name, or the endpoints' port number). */
export interface GatewayService {
  readonly namespace: string;
  readonly name: string;
  readonly port?: string | number;
}

/** A namespace name, and a port name: DNS labels. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
/** A Service's name: an RFC 1035 label (a letter first, at most 63). */
const SERVICE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * `<namespace>/<name>[:<port>]`, the port a port name (a DNS label) or a number from 1 to
 * 65535: the Service, or what is wrong with `text` (one line, to follow the setting's name).
 */
export function parseGatewayService(text: string): GatewayService | string {
  const want = `must be <namespace>/<service name>[:<port name or number>], got "${text}"`;
  const m = /^([^/:]+)\/([^/:]+)(?::([^/:]*))?$/.exec(text);
  if (!m) return want;
  const [namespace, service, port] = [m[1] as string, m[2] as string, m[3]];
  if (!DNS_LABEL.test(namespace)) return `${want}: "${namespace}" is not a namespace name`;
  if (!SERVICE_NAME.test(service)) return `${want}: "${service}" is not a Service name`;
  if (port === undefined) return { namespace, name: service };
  if (/^[0-9]+$/.test(port)) {
    const n = Number(port);
    if (n < 1 || n > 65535) return `${want}: the port number must be from 1 to 65535`;
    return { namespace, name: service, port: n };
  }
  if (!DNS_LABEL.test(port)) return `${want}: "${port}" is neither a port name nor a number`;
  return { namespace, name: service, port };
}

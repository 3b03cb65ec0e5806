/**
 * One HTTP call to a gateway or Dashboard admin API: `httpRequest` with the client's agent
 * and timeout, where a transport failure (refused, reset, dropped, timed out) becomes a
 * GatewayUnavailableError naming the target. The request headers, which carry the secret,
 * never reach the error.
 */
import { GatewayUnavailableError } from '../errors.js';
import { type HttpRequest, type HttpResponse, httpRequest, TransportError } from '../http.js';

export async function gatewayCall(target: string, req: HttpRequest): Promise<HttpResponse> {
  try {
    return await httpRequest(req);
  } catch (err) {
    if (err instanceof TransportError) throw new GatewayUnavailableError(`${target}: ${err.message}`, { cause: err });
    throw err;
  }
}

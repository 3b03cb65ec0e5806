/**
 * One HTTP call to a gateway or Dashboard admin API: `httpRequest` with the client's agent
 * and timeout, where a transport failure (refused, reset, dropped, timed out) becomes a
 * GatewayUnavailableError naming the target. The request headers, which carry the secret,
 * never reach the error. `answerMessage` is what an error answer says, for error messages.
 */
import { GatewayUnavailableError } from '../errors.js';
import { isObject, nonEmpty } from '../guards.js';
import { type HttpRequest, type HttpResponse, httpRequest, TransportError } from '../http.js';

export async function gatewayCall(target: string, req: HttpRequest): Promise<HttpResponse> {
  try {
    return await httpRequest(req);
  } catch (err) {
    if (err instanceof TransportError) throw new GatewayUnavailableError(`${target}: ${err.message}`, { cause: err });
    throw err;
  }
}

/** The answer's JSON `field` (Tyk: `message`, the Dashboard: `Message`), else the start of its body on one line. */
export function answerMessage(res: HttpResponse, field: string): string {
  const m = isObject(res.json) ? nonEmpty(res.json[field]) : undefined;
  return m ?? (res.text.slice(0, 200).replace(/\s+/g, ' ').trim() || 'no message');
}

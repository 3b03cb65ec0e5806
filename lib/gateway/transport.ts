/**
 * One HTTP call to a gateway or Dashboard admin API: a request over the client's transport
 * (lib/platform/http.ts: Node's or undici's, as the service chose) with its timeout, where a transport failure (refused, reset, dropped, timed out) becomes a
 * GatewayUnavailableError naming the target, and an answer above the request's
 * `maxResponseBytes` a GatewayResponseTooLargeError naming the target and the setting
 * (GATEWAY_MAX_RESPONSE_BYTES). The request headers, which carry the secret, never reach
 * the error. Every call, answered or not, is told to the client's observer (the
 * metrics) with its method, outcome and wall time; an observer that throws is ignored.
 * `answerMessage` is what an error answer says, for error messages: the gateway's error message
 * (or the start of its body), on one line, at most ANSWER_MESSAGE_MAX (300) characters. It is
 * the only text of an answer that reaches an error, and so a status or an Event.
 * `isAuthorisationFailure` says whether an answer refuses the credentials (401, or a 403 that
 * says so: Tyk Gateway's "invalid or missing key", the Dashboard's "Not authorised" and "access
 * denied ... permission"), as opposed to a 403 that refuses the request itself (a Dashboard's
 * "Request body malformed", or its portal's documentation while the organisation has no
 * catalogue).
 */

import type { GatewayCallFigure } from '../metrics/catalogue.js';
import { GatewayResponseTooLargeError, GatewayUnavailableError } from '../platform/errors.js';
import { isObject, nonEmpty } from '../platform/guards.js';
import { type HttpRequest, type HttpResponse, type HttpTransport, ResponseTooLargeError, TransportError } from '../platform/http.js';

/** Told of every call a gateway client makes (lib/metrics). */
export type GatewayObserver = (call: GatewayCallFigure) => void;

export interface CallTarget {
  /** for error messages: "gateway <name>" or "dashboard <name>" */
  readonly label: string;
  /** the target's name, for the observer */
  readonly name: string;
  readonly observe?: GatewayObserver;
  /** the client's connection pool, with its TLS settings */
  readonly transport: HttpTransport;
}

export async function gatewayCall(target: CallTarget, req: HttpRequest): Promise<HttpResponse> {
  const started = performance.now();
  const tell = (outcome: string): void => {
    try {
      target.observe?.({ gateway: target.name, method: req.method, outcome, seconds: (performance.now() - started) / 1000 });
    } catch {
      // a metric never fails a call
    }
  };
  try {
    const res = await target.transport.request(req);
    tell(`${Math.floor(res.status / 100)}xx`);
    return res;
  } catch (err) {
    tell('unavailable');
    if (err instanceof TransportError) throw new GatewayUnavailableError(`${target.label}: ${err.message}`, { cause: err });
    if (err instanceof ResponseTooLargeError) throw new GatewayResponseTooLargeError(`${target.label}: ${err.message} (GATEWAY_MAX_RESPONSE_BYTES)`, { cause: err, context: { limit: err.limit } });
    throw err;
  }
}

/** The most of a gateway's answer an error message carries. */
export const ANSWER_MESSAGE_MAX = 300;

/** The answer's JSON `field` (Tyk: `message`, the Dashboard: `Message`), else the start of its body; on one line, capped. */
export function answerMessage(res: HttpResponse, field: string): string {
  const m = isObject(res.json) ? nonEmpty(res.json[field]) : undefined;
  const line = (m ?? res.text)
    .slice(0, ANSWER_MESSAGE_MAX * 4)
    .replace(/\s+/g, ' ')
    .trim();
  if (line === '') return 'no message';
  return line.length <= ANSWER_MESSAGE_MAX ? line : `${line.slice(0, ANSWER_MESSAGE_MAX - 1)}…`;
}

const AUTHORISATION_FAILURE = /not authori[sz]ed|access denied|permission|invalid or missing key|administrative access|unauthori[sz]ed|forbidden/i;

/** Whether an answer refuses the credentials rather than the request (see the header). */
export function isAuthorisationFailure(status: number, message: string): boolean {
  return status === 401 || (status === 403 && AUTHORISATION_FAILURE.test(message));
}

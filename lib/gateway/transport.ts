/**
 * One HTTP call to a gateway or Dashboard admin API: `httpRequest` with the client's agent
 * and timeout, where a transport failure (refused, reset, dropped, timed out) becomes a
 * GatewayUnavailableError naming the target. The request headers, which carry the secret,
 * never reach the error. Every call, answered or not, is told to the client's observer (the
 * metrics) with its method, outcome and wall time; an observer that throws is ignored.
 * `answerMessage` is what an error answer says, for error messages: the gateway's error message
 * (or the start of its body), on one line, at most ANSWER_MESSAGE_MAX (300) characters. It is
 * the only text of an answer that reaches an error, and so a status or an Event.
 */
import { GatewayUnavailableError } from '../errors.js';
import { isObject, nonEmpty } from '../guards.js';
import { type HttpRequest, type HttpResponse, httpRequest, TransportError } from '../http.js';
import type { GatewayCallFigure } from '../metrics/catalogue.js';

/** Told of every call a gateway client makes (lib/metrics). */
export type GatewayObserver = (call: GatewayCallFigure) => void;

export interface CallTarget {
  /** for error messages: "gateway <name>" or "dashboard <name>" */
  readonly label: string;
  /** the target's name, for the observer */
  readonly name: string;
  readonly observe?: GatewayObserver;
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
    const res = await httpRequest(req);
    tell(`${Math.floor(res.status / 100)}xx`);
    return res;
  } catch (err) {
    tell('unavailable');
    if (err instanceof TransportError) throw new GatewayUnavailableError(`${target.label}: ${err.message}`, { cause: err });
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

/**
 * Refusals: a resource whose reference crosses a namespace no ReferenceGrant opens
 * (RefNotPermitted), or whose OperatorContext's URL is not permitted (UrlNotPermitted), is
 * Failed with that reason in its Synced and Ready conditions and its Warning Event, and with
 * the matching stable code in the run report. Pure.
 */
import type { Refusal } from '../gateway/targets.js';

const CODES: Readonly<Record<Refusal, string>> = { RefNotPermitted: 'REF_NOT_PERMITTED', UrlNotPermitted: 'URL_NOT_PERMITTED' };

/** The report's `code` of a refusal. */
export function refusalCode(refusal: Refusal): string {
  return CODES[refusal];
}

/** The refusal a report's `code` stands for, if it is one. */
export function refusalOfCode(code: string | undefined): Refusal | undefined {
  return (Object.keys(CODES) as Refusal[]).find((r) => CODES[r] === code);
}

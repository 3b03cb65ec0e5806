/**
 * The admission webhook and the engine agree: `sameVerdict` reviews an object as stored (an
 * UPDATE that changes nothing) through POST /admission and checks the verdict against the run's
 * outcome for it: denied where the run finds it invalid or refuses it before any write (with the
 * run's message), admitted otherwise, with a warning where it waits.
 */
import type { Test } from 'tap';
import type { RunReport } from '../../lib/engine/types.js';
import type { KubeObject } from '../../lib/kube/types.js';
import { admissionReview } from '../fixtures/admission.js';
import type { World } from './world.js';

/** The report codes of a refusal before any write (the review denies them, as the run fails them). */
const REFUSAL_CODES = new Set(['REF_NOT_PERMITTED', 'URL_NOT_PERMITTED', 'ID_CLAIMED', 'ADOPTION_NOT_PERMITTED', 'LISTEN_PATH_CLASH']);

export interface ReviewAnswer {
  response: { uid: string; allowed: boolean; status?: { code: number; reason: string; message: string }; warnings?: string[] };
}

export async function sameVerdict(t: Test, w: World, key: string, doc: KubeObject, o: RunReport['objects'][number]): Promise<void> {
  const stored = await w.get(doc.metadata.name, doc.metadata.namespace ?? 'default', doc.kind);
  if (!stored) {
    t.fail(`${key}: not stored`);
    return;
  }
  const res = await w.inject<ReviewAnswer>('POST', '/admission', JSON.stringify(admissionReview('UPDATE', stored).build()));
  const verdict = res.body.response;
  const refusal = o.result === 'failed' && o.code !== undefined && REFUSAL_CODES.has(o.code);
  if (o.result === 'invalid' || refusal) {
    t.equal(verdict.allowed, false, `${key}: the run finds it ${o.result}; the review denies it`);
    t.ok(o.error !== undefined && (verdict.status?.message ?? '').includes(o.error), `${key}: with the run's message`);
  } else {
    t.equal(verdict.allowed, true, `${key}: the run finds it ${o.result}; the review admits it`);
    if (o.result === 'waiting')
      t.ok(
        (verdict.warnings ?? []).some((x) => x.includes('Waiting:') || x.includes('would wait')),
        `${key}: with a warning that it waits`,
      );
  }
}

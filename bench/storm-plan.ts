/**
 * The storm's script, decided before it starts (pure, seeded): which object is written when,
 * and which of those writes change the spec. See bench/run.ts's header for why it is shaped so.
 *
 * - `objects` of the bench's N objects, spread evenly over them (every N/objects-th);
 * - `happenings` writes by cluster users at uniformly random times in [0, durationMs): each
 *   object is written at least once, the rest fall on random objects (about 5 each);
 * - `changed` of those objects (random) get exactly one spec edit (global_rate_limit.rate set
 *   to a new value, 1000 + k, which no seeded object has): one of their writes, chosen at
 *   random. Every other write is a metadata-only change (an annotation, as Argo CD's tracking
 *   or a label controller would make): a real write with a new resourceVersion and the same
 *   generation, which must cost no gateway write.
 * Each write is then delivered twice, as an audit event (in a batch) and as a forwarded watch
 * event (alone), so the storm carries 2 × happenings events.
 */

export interface StormSettings {
  durationMs: number;
  /** cluster writes; each becomes one audit event and one watch event */
  happenings: number;
  /** distinct objects written to */
  objects: number;
  /** of those, how many get one spec edit */
  changed: number;
  /** the audit backend: at most this many events per delivery (kube-apiserver's default, 400) */
  auditBatchMax: number;
  /** the audit backend: a delivery at most this often (kube-apiserver's default throttle, 10 per second) */
  auditEveryMs: number;
  seed: number;
}

export const STORM_DEFAULTS: StormSettings = {
  durationMs: 10_000,
  happenings: 5_000,
  objects: 1_000,
  changed: 100,
  auditBatchMax: 400,
  auditEveryMs: 100,
  seed: 13,
};

export interface Happening {
  /** ms after the storm's start */
  at: number;
  /** the bench object (0..N-1) written */
  index: number;
  /** set on the one spec edit of a changed object: its new global_rate_limit.rate */
  rate?: number;
}

export interface StormPlan {
  settings: StormSettings;
  /** sorted by `at` */
  happenings: Happening[];
  /** the objects written to */
  objects: number[];
  /** the changed objects and their new rate */
  changed: { index: number; rate: number }[];
}

/** mulberry32: a small seeded PRNG, so every run of the bench plays the same storm. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function stormPlan(n: number, wanted: StormSettings = STORM_DEFAULTS): StormPlan {
  const objectCount = Math.min(wanted.objects, n);
  const settings: StormSettings = { ...wanted, objects: objectCount, changed: Math.min(wanted.changed, objectCount), happenings: Math.max(wanted.happenings, objectCount) };
  const random = prng(settings.seed);
  const pick = (k: number): number => Math.floor(random() * k);
  const objects = Array.from({ length: objectCount }, (_, k) => Math.floor((k * n) / objectCount));
  const happenings: Happening[] = [];
  for (let h = 0; h < settings.happenings; h++) {
    // the first `objectCount` writes cover every object once; the rest fall anywhere
    const index = h < objectCount ? (objects[h] as number) : (objects[pick(objectCount)] as number);
    happenings.push({ at: Math.floor(random() * settings.durationMs * 1000) / 1000, index });
  }
  // which objects change: a partial Fisher-Yates shuffle
  const order = [...objects];
  for (let k = 0; k < settings.changed; k++) {
    const j = k + pick(order.length - k);
    [order[k], order[j]] = [order[j] as number, order[k] as number];
  }
  const changed = order.slice(0, settings.changed).map((index, k) => ({ index, rate: 1000 + k }));
  const byObject = new Map<number, Happening[]>();
  for (const h of happenings) byObject.set(h.index, [...(byObject.get(h.index) ?? []), h]);
  for (const c of changed) {
    const mine = byObject.get(c.index) as Happening[];
    (mine[pick(mine.length)] as Happening).rate = c.rate;
  }
  happenings.sort((a, b) => a.at - b.at);
  return { settings, happenings, objects, changed };
}

/**
 * The warm-up before a storm (unmeasured): `happenings` metadata-only writes to the storm's
 * first objects, evenly over `durationMs` (a burst), with their audit and watch events, through
 * the same senders. A server taking webhooks has its senders' connections open and its webhook
 * path compiled; without this the storm's first second measured the opening of hundreds of
 * connections (accepted by the reconciler one per turn of its busy event loop) and V8's first
 * compilation of both processes' webhook code instead.
 */
export function warmupPlan(plan: StormPlan, happenings = 300, durationMs = 200): StormPlan {
  const objects = plan.objects.slice(0, happenings);
  const count = objects.length;
  return {
    settings: { ...plan.settings, durationMs, happenings: count, objects: count, changed: 0 },
    happenings: objects.map((index, k) => ({ at: (k * durationMs) / count, index })),
    objects,
    changed: [],
  };
}

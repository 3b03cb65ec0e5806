/**
 * A CPU profile of one piece of a bench process's work, the measured one's or the fakes' (the
 * inspector's sampling profiler, the same data `node --cpu-prof` writes), saved as a .cpuprofile (open it in Chrome
 * DevTools or speedscope) and summed up: the functions and the files with the most self time.
 */
import { writeFile } from 'node:fs/promises';
import type { Profiler } from 'node:inspector';
import { Session } from 'node:inspector/promises';

export interface ProfileSummary {
  file: string;
  /** sampled time spent working (idle time and the profiler's own calls left out) */
  totalMs: number;
  /** sampled idle time (waiting for I/O), ms */
  idleMs: number;
  /** by function (name, file:line), most self time first */
  functions: { name: string; where: string; selfMs: number; pct: number }[];
  /** by source file (node_modules packages by package), most self time first */
  files: { file: string; selfMs: number; pct: number }[];
}

export async function profiled<T>(file: string, fn: () => Promise<T>): Promise<{ value: T; summary: ProfileSummary }> {
  const profiler = await startProfile();
  let value: T;
  try {
    value = await fn();
  } catch (err) {
    await profiler.stop(file).catch(() => undefined);
    throw err;
  }
  return { value, summary: await profiler.stop(file) };
}

/** Starts the sampling profiler in this process; `stop` writes the profile to `file` and sums it up. */
export async function startProfile(): Promise<{ stop(file: string): Promise<ProfileSummary> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 250 });
  await session.post('Profiler.start');
  return {
    stop: async (file) => {
      let profile: Profiler.Profile;
      try {
        profile = (await session.post('Profiler.stop')).profile;
      } finally {
        session.disconnect();
      }
      await writeFile(file, JSON.stringify(profile));
      return summarize(file, profile);
    },
  };
}

function shortFile(url: string): string {
  if (url === '') return '(native/vm)';
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = path.slice(nm + '/node_modules/'.length).split('/');
    return `node_modules/${rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  const repo = path.indexOf('/wt-');
  return repo >= 0 ? path.slice(path.indexOf('/', repo + 1) + 1) : path.startsWith('node:') ? path : path.split('/').slice(-2).join('/');
}

export function summarize(file: string, profile: Profiler.Profile): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  const deltas = profile.timeDeltas ?? [];
  (profile.samples ?? []).forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (deltas[i] ?? 0)));
  const fns = new Map<string, { name: string; where: string; us: number }>();
  const files = new Map<string, number>();
  let total = 0;
  let idle = 0;
  for (const [id, us] of self) {
    const node = byId.get(id);
    if (!node) continue;
    const cf = node.callFrame;
    // the profiler's own stop call, and time with nothing to do, are not the work profiled
    if (cf.functionName === '(idle)') idle += us;
    if (cf.url === 'node:inspector' || cf.functionName === '(idle)') continue;
    const where = cf.url === '' ? '' : `${shortFile(cf.url)}:${cf.lineNumber + 1}`;
    const name = cf.functionName || '(anonymous)';
    const key = `${name}\u0000${where}`;
    const entry = fns.get(key) ?? { name, where, us: 0 };
    entry.us += us;
    fns.set(key, entry);
    const f = cf.url === '' ? name : shortFile(cf.url);
    files.set(f, (files.get(f) ?? 0) + us);
    total += us;
  }
  const pct = (us: number): number => Math.round((us / Math.max(total, 1)) * 1000) / 10;
  return {
    file,
    totalMs: Math.round(total / 1000),
    idleMs: Math.round(idle / 1000),
    functions: [...fns.values()]
      .sort((a, b) => b.us - a.us)
      .slice(0, 25)
      .map((f) => ({ name: f.name, where: f.where, selfMs: Math.round(f.us / 1000), pct: pct(f.us) })),
    files: [...files.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([f, us]) => ({ file: f, selfMs: Math.round(us / 1000), pct: pct(us) })),
  };
}

/**
 * Where Tyk Operator's reference material is: its CRDs (`crds/`), its samples (`samples/`) and a
 * real audit EventList (`audit-eventlist-example.json`). They are not the project's to copy, so
 * the compat suites read them from a folder outside the repository, named by
 * `TYK_REFERENCE_DIR` (`npm run test:compat -- <folder>` sets it).
 *
 * Guarantees: returns an absolute path to a folder that holds `crds/` and `samples/`.
 * Throws: one line naming `TYK_REFERENCE_DIR` when it is unset or does not hold them.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export function referenceDir(): string {
  const dir = process.env.TYK_REFERENCE_DIR;
  if (!dir) throw new Error('TYK_REFERENCE_DIR is not set: run the compat suites with `npm run test:compat -- <folder with crds/ and samples/>`');
  const abs = resolve(dir);
  for (const sub of ['crds', 'samples']) {
    if (!existsSync(join(abs, sub))) throw new Error(`TYK_REFERENCE_DIR=${dir} holds no ${sub}/ folder`);
  }
  return abs;
}

/** A file or folder inside the reference folder. */
export function referencePath(...parts: string[]): string {
  return join(referenceDir(), ...parts);
}

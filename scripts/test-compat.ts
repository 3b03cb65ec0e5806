/**
 * `npm run test:compat -- <folder>`: the suites that compare the project with Tyk Operator's
 * CRDs, samples and a real audit EventList (test/compat/), read from <folder> (e.g.
 * ../shared/reference: it holds crds/, samples/ and audit-eventlist-example.json). Those files
 * are not the project's, so `npm test` does not need them.
 *
 * Exits 2 with one line when the folder is missing; else with tap's exit code.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, referenceArg, runTap } from './tap-tier.js';

const dir = referenceArg();
if (!dir || !existsSync(join(dir, 'crds')) || !existsSync(join(dir, 'samples'))) {
  console.error(`test:compat: name the folder holding Tyk Operator's crds/ and samples/: npm run test:compat -- ../shared/reference${dir ? ` (${dir} holds no crds/ and samples/)` : ''}`);
  process.exit(2);
}
const files = readdirSync(join(ROOT, 'test/compat'))
  .filter((f) => f.endsWith('.test.ts'))
  .sort()
  .map((f) => `test/compat/${f}`);
process.exitCode = await runTap(files, { TYK_REFERENCE_DIR: dir });

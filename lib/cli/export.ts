/**
 * `gateway-reconciler export`: being built; answers that it is not available yet.
 */
import type { Command } from './io.js';

export const EXPORT: Command = {
  name: 'export',
  summary: 'not available yet',
  help: 'gateway-reconciler export: not available yet',
  async run(_args, io) {
    io.err('gateway-reconciler export: not available yet');
    return 1;
  },
};

/**
 * `gateway-reconciler plan`: being built; answers that it is not available yet.
 */
import type { Command } from './io.js';

export const PLAN: Command = {
  name: 'plan',
  summary: 'not available yet',
  help: 'gateway-reconciler plan: not available yet',
  async run(_args, io) {
    io.err('gateway-reconciler plan: not available yet');
    return 1;
  },
};

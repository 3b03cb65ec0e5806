/** What holds an API kind's deletion: the live SecurityPolicies that grant it (their `referencedBy`). Data only, so a kind's value can name it while the modules load. */
import type { HeldBy } from '../../engine/kind.js';

export const HELD_BY_POLICIES: HeldBy = { reason: 'referenced by policies', kind: 'SecurityPolicy', many: 'SecurityPolicies' };

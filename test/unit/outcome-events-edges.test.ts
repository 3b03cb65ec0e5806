/**
 * Which Event an outcome gives, at the edges of the table in lib/engine/outcome-events.ts
 * (test/unit/outcome-events.test.ts states the table).
 */
import t from 'tap';
import { outcomeEvent } from '../../lib/engine/outcome-events.js';

t.test('a gateway without the API is named by the reason alone, whatever the code', async (t) => {
  t.same(outcomeEvent({ result: 'failed', reason: 'not supported by gateway', action: 'NOOP', id: 'x', error: 'no /tyk/policies' }), {
    type: 'Warning',
    reason: 'GatewayUnsupported',
    message: 'no /tyk/policies',
  });
  t.same(outcomeEvent({ result: 'failed', reason: 'read failed', action: 'NOOP', id: 'x', error: 'list policies: 404', code: 'GATEWAY_UNSUPPORTED' }), {
    type: 'Warning',
    reason: 'GatewayUnsupported',
    message: 'list policies: 404',
  });
});

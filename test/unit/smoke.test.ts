import t from 'tap';
import { describeError, ConfigError } from '../../lib/errors.js';
t.test('describeError', async (t) => {
  t.equal(describeError(new ConfigError('TYK_URL', 'is required')), 'TYK_URL: is required');
});

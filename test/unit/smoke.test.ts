import t from 'tap';
import { describeError, ConfigError } from '../../lib/errors.js';
t.test('describeError', async (t) => {
  t.equal(describeError(new ConfigError([{ setting: 'TYK_URL', message: 'is required' }])), 'TYK_URL: is required');
});

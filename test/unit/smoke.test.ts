import t from 'tap';
import { ConfigError, describeError } from '../../lib/platform/errors.js';

t.test('describeError', async (t) => {
  t.equal(describeError(new ConfigError([{ setting: 'TYK_URL', message: 'is required' }])), 'TYK_URL: is required');
});

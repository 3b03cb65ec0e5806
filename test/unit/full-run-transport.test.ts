/**
 * HTTP_CLIENT chooses the transport of full runs (lib/service.ts fullRunTransport): Node's own
 * by default (createService's, so none is passed), undici's pooled client when asked, loaded
 * only then.
 */
import t from 'tap';
import { loadConfig } from '../../lib/platform/config.js';
import { fullRunTransport } from '../../lib/service.js';

const base = { TYK_URL: 'http://tyk:8080', TYK_AUTH: 'secret-gateway-key', WEBHOOK_TOKEN: 'a-webhook-token-of-some-length', RESYNC_TOKEN: 'a-webhook-token-of-some-length' };

t.test("by default a full run keeps Node's own client", async (t) => {
  t.equal(await fullRunTransport(loadConfig(base)), undefined);
  t.equal(await fullRunTransport(loadConfig({ ...base, HTTP_CLIENT: 'node' })), undefined);
});

t.test("HTTP_CLIENT=undici: undici's pooled client", async (t) => {
  const factory = await fullRunTransport(loadConfig({ ...base, HTTP_CLIENT: 'undici' }));
  if (!factory) return t.fail('no transport');
  const transport = factory({});
  t.teardown(() => transport.close());
  t.equal(transport.kind, 'undici');
});

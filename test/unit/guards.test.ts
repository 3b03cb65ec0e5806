/**
 * lib/platform/guards.ts and lib/gateway/connection.ts: the shared readers of untyped values and the
 * one parser of the TYK_* connection settings (environment and OperatorContext alike).
 */
import t from 'tap';
import { parseConnection } from '../../lib/gateway/connection.js';
import { isEmptyJson, isObject, nonEmpty, parseFlag, trimmed } from '../../lib/platform/guards.js';

t.test('guards', async (t) => {
  t.ok(isObject({}));
  for (const v of [null, [], 'x', 1, undefined]) t.notOk(isObject(v), `${JSON.stringify(v)} is no object`);
  t.equal(nonEmpty(' a '), ' a ');
  t.equal(nonEmpty(''), undefined);
  t.equal(nonEmpty(3), undefined);
  t.equal(trimmed(' a '), 'a');
  t.equal(trimmed('  '), undefined);
  t.equal(trimmed(3), undefined);
  for (const v of [true, 'true', ' YES ', '1']) t.equal(parseFlag(v), true, `${String(v)} → true`);
  for (const v of [false, 'false', 'No', '0']) t.equal(parseFlag(v), false, `${String(v)} → false`);
  for (const v of [undefined, null, '', '  ']) t.equal(parseFlag(v), undefined, `${String(v)} → absent`);
  for (const v of ['maybe', 2, {}]) t.equal(parseFlag(v), null, `${String(v)} → invalid`);
});

t.test('isEmptyJson: a value that says nothing', async (t) => {
  for (const v of [undefined, null, '', {}, []]) t.ok(isEmptyJson(v), `${JSON.stringify(v)} is empty`);
  for (const v of [0, false, ' ', { a: null }, [null], 'x']) t.notOk(isEmptyJson(v), `${JSON.stringify(v)} says something`);
});

t.test('parseConnection: defaults, normalisation, one problem per setting', async (t) => {
  t.same(parseConnection({ TYK_URL: 'https://tyk:8080//', TYK_AUTH: ' k ' }), {
    settings: { mode: 'ce', url: 'https://tyk:8080', auth: 'k', insecureSkipVerify: false },
    problems: [],
  });
  t.same(parseConnection({ TYK_MODE: 'PRO', TYK_URL: 'http://d', TYK_AUTH: 'k', TYK_ORG: 'o', TYK_TLS_INSECURE_SKIP_VERIFY: true }).settings, {
    mode: 'pro',
    url: 'http://d',
    auth: 'k',
    org: 'o',
    insecureSkipVerify: true,
  });
  const { problems } = parseConnection({ TYK_MODE: 'enterprise', TYK_URL: 'ftp://x', TYK_AUTH: ' ', TYK_TLS_INSECURE_SKIP_VERIFY: 'Maybe' });
  t.same(problems, [
    { setting: 'TYK_MODE', message: 'must be ce or pro, got "enterprise"' },
    { setting: 'TYK_URL', message: 'must be an http or https URL, got protocol "ftp:"' },
    { setting: 'TYK_AUTH', message: 'is required (the gateway secret)' },
    { setting: 'TYK_TLS_INSECURE_SKIP_VERIFY', message: 'must be true or false, got "maybe"' },
  ]);
  t.match(parseConnection({ TYK_AUTH: 'k' }).problems, [{ setting: 'TYK_URL', message: /^is required/ }]);
  t.match(parseConnection({ TYK_URL: 'http://u:p@tyk', TYK_AUTH: 'k' }).problems, [{ setting: 'TYK_URL', message: /must not contain credentials/ }]);
  t.match(parseConnection({ TYK_URL: 'not a url', TYK_AUTH: 'k' }).problems, [{ setting: 'TYK_URL', message: 'is not a valid URL' }]);
});

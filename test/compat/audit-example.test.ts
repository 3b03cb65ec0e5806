/**
 * The real audit EventList from the reference folder (a kube-apiserver 1.20 audit webhook's
 * batch about a `kubectl run`) parses, and nothing in it is taken: it is about a Pod.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { parseAuditEventList } from '../../lib/events/audit.js';
import { collect } from '../../lib/events/refs.js';
import { referencePath } from './reference.js';

t.test('audit: the real EventList shape from the reference parses (a pod: nothing taken)', async (t) => {
  const text = readFileSync(referencePath('audit-eventlist-example.json'), 'utf8');
  const r = collect(parseAuditEventList(text));
  t.same(r.scope.refs, []);
  t.same(r.ignored, { 'kind not reconciled': 1 });
});

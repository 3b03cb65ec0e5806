/**
 * StrykerJS ignorer: no mutants in log statements.
 *
 * A log line is for people reading it, not behaviour a test pins (Stryker's docs give the same
 * example for console.log). Ignored: an expression statement that calls `<x>.log.<level>(…)` or
 * `log.<level>(…)`, an arrow function whose body is such a call, and an `if` with no `else` whose only statement is such a call (its condition
 * decides nothing but whether a line is written). Everything else is mutated.
 */
import { PluginKind, declareValuePlugin } from '@stryker-mutator/api/plugin';

const LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal']);

function isLogCall(node) {
  if (node?.type !== 'CallExpression' || node.callee.type !== 'MemberExpression') return false;
  const { object, property } = node.callee;
  if (property.type !== 'Identifier' || !LEVELS.has(property.name)) return false;
  if (object.type === 'Identifier') return object.name === 'log';
  return object.type === 'MemberExpression' && object.property.type === 'Identifier' && object.property.name === 'log';
}

function isLogStatement(node) {
  if (node?.type === 'ExpressionStatement') return isLogCall(node.expression);
  if (node?.type === 'BlockStatement') return node.body.length === 1 && isLogStatement(node.body[0]);
  return false;
}

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'log-statements', {
    shouldIgnore(path) {
      if (isLogStatement(path.node)) return 'a log statement: read by people, not pinned by tests';
      if (path.isIfStatement() && !path.node.alternate && isLogStatement(path.node.consequent)) return 'a condition that only decides whether a line is logged';
      if (path.isArrowFunctionExpression() && isLogCall(path.node.body)) return 'a callback that only logs';
      return undefined;
    },
  }),
];

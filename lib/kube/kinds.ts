/**
 * Kinds the reconciler reads and never reconciles: where a resource's gateway connection comes
 * from (OperatorContext, and the Secret it names), where documents and certificates live
 * (ConfigMap, Secret), and what it tells (Event).
 */
import type { ResourceKind } from './types.js';

export const OPERATOR_CONTEXT: ResourceKind = { kind: 'OperatorContext', group: 'tyk.tyk.io', version: 'v1alpha1', plural: 'operatorcontexts' };
export const SECRET: ResourceKind = { kind: 'Secret', group: '', version: 'v1', plural: 'secrets' };
export const CONFIG_MAP: ResourceKind = { kind: 'ConfigMap', group: '', version: 'v1', plural: 'configmaps' };
export const EVENT: ResourceKind = { kind: 'Event', group: '', version: 'v1', plural: 'events' };

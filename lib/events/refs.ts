/**
 * What a trigger asks to look at, coalesced: single objects, whole namespaces, or everything.
 * Duplicates collapse, so 400 events about 3 objects become 3 refs. Pure.
 */
import type { RunScope } from '../reconcile/run.js';
import { findKind, type ObjectRef } from '../reconcile/kinds.js';

export interface Intake {
  scope: RunScope;
  /** events taken (each names something we reconcile) */
  accepted: number;
  /** events ignored, by why */
  ignored: Record<string, number>;
}

export class IntakeBuilder {
  private readonly refs = new Map<string, ObjectRef>();
  private readonly namespaces = new Set<string>();
  private accepted = 0;
  private readonly ignored: Record<string, number> = {};

  ignore(why: string): void {
    this.ignored[why] = (this.ignored[why] ?? 0) + 1;
  }

  /** Adds a ref when `kindName` is a kind we reconcile; otherwise counts it as ignored. */
  addObject(kindName: string, namespace: string, name: string): void {
    const kind = findKind(kindName);
    if (kind === undefined) return this.ignore('kind not reconciled');
    this.accepted++;
    this.refs.set(`${kind.kind}/${namespace}/${name}`, { kind, namespace, name });
  }

  addNamespace(kindName: string, namespace: string): void {
    if (findKind(kindName) === undefined) return this.ignore('kind not reconciled');
    this.accepted++;
    this.namespaces.add(namespace);
  }

  build(): Intake {
    const refs = [...this.refs.values()].filter((r) => !this.namespaces.has(r.namespace));
    return { scope: { refs, namespaces: [...this.namespaces] }, accepted: this.accepted, ignored: { ...this.ignored } };
  }
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

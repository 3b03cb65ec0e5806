/**
 * Apollo Federation composition of SubGraph SDLs into one supergraph, with
 * @theguild/federation-composition (Federation v1 SDL without `@link`, and v2 with it). Pure:
 * the same subgraphs give the same answer, no I/O, no clock.
 *
 * This module is loaded with a dynamic import (api-definition/build.ts `composer`) only when a run builds an API
 * of execution_mode supergraph: it brings in `graphql` and the composition library, which other
 * runs (and every webhook function's cold start) do not need.
 *
 * Answers the composed public schema (the supergraph as clients see it: no federation
 * directives, no join types), or every error the composition found, each naming what
 * conflicts and in which subgraphs (e.g. `Type of field "User.name" is incompatible across
 * subgraphs: it has type "Int!" in subgraph "default/other" but type "String!" in subgraph
 * "default/users"`). A subgraph whose SDL does not parse is named with the parser's message.
 *
 * A composition is redone only when its inputs changed: answers are kept per process by the
 * SHA-256 of the subgraphs' names and SDLs (the last COMPOSITIONS_KEPT, least recently used
 * forgotten first), so a run over a cluster whose graphs did not change composes nothing, and
 * a costly SDL costs its author once per change, not once per run.
 */
import { createHash } from 'node:crypto';
import { composeServices } from '@theguild/federation-composition';
import { type DocumentNode, parse } from 'graphql';

/** One subgraph to compose: its name in messages (unique among them), and its SDL. */
export interface SubgraphSdl {
  readonly name: string;
  readonly sdl: string;
}

export type Composition = { readonly ok: true; readonly publicSdl: string } | { readonly ok: false; readonly errors: readonly string[] };

export type Compose = (subgraphs: readonly SubgraphSdl[]) => Composition;

const composeNow: Compose = (subgraphs) => {
  const parsed: { name: string; typeDefs: DocumentNode }[] = [];
  const errors: string[] = [];
  for (const s of subgraphs) {
    try {
      parsed.push({ name: s.name, typeDefs: parse(s.sdl) });
    } catch (err) {
      errors.push(`subgraph "${s.name}": sdl is not valid GraphQL: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  const result = composeServices(parsed);
  if (result.errors !== undefined) return { ok: false, errors: result.errors.map((e) => e.message) };
  return { ok: true, publicSdl: result.publicSdl };
};

/** How many compositions a process keeps. */
export const COMPOSITIONS_KEPT = 64;

/** `compose` answering inputs it has seen from memory (see the header). */
export function memoised(compose: Compose, kept = COMPOSITIONS_KEPT): Compose {
  const answers = new Map<string, Composition>();
  return (subgraphs) => {
    const key = createHash('sha256');
    for (const s of subgraphs) key.update(`${s.name.length}:${s.name}${s.sdl.length}:${s.sdl}`);
    const digest = key.digest('hex');
    const known = answers.get(digest);
    if (known !== undefined) {
      // most recently used last
      answers.delete(digest);
      answers.set(digest, known);
      return known;
    }
    const answer = compose(subgraphs);
    answers.set(digest, answer);
    if (answers.size > kept) answers.delete(answers.keys().next().value as string);
    return answer;
  };
}

export const composeSubgraphs: Compose = memoised(composeNow);

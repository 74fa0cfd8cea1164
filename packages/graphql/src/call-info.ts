import type { Lock } from '@lock/core';
import type { GraphQLResolveInfo } from 'graphql';
import { attachLock } from './lock-of.js';

type Path = GraphQLResolveInfo['path'];

/** The `path` each `callInfo` copy was made from. */
const origins = new WeakMap<Path, Path>();

/**
 * The `info` a locked call hands its resolver, for which `lockOf` answers `lock`: a copy, with a
 * `path` object of its own. A resolver may hand its own `info` to other locked resolvers, several
 * running at a time: each call needs an identity of its own, or their locks would mix. The copy
 * reads as the original: graphql-js (and graphql-tools' executor) build `info` and `path` as
 * plain objects.
 */
export function callInfo(info: GraphQLResolveInfo, lock: Lock): GraphQLResolveInfo {
  const path = { ...info.path };
  origins.set(path, info.path);
  const own = { ...info, path };
  attachLock(own, lock);
  return own;
}

/**
 * The `path` the `callInfo` copy holding `path` was made from: the call that handed its `info`
 * down. Undefined for a `path` graphql-js built.
 */
export function originOf(path: Path): Path | undefined {
  return origins.get(path);
}

/**
 * The token the engine holds for a RedLock lease: one protocol token per node (null where the
 * node did not grant it), so protocols whose token differs per node still release and extend
 * correctly. Opaque to the engine.
 */
export type NodeTokens = readonly (string | null)[];

export function encodeTokens(tokens: NodeTokens): string {
  return JSON.stringify(tokens);
}

/** Reads a token made by `encodeTokens` for `nodes` nodes; anything else is not ours, so null. */
export function decodeTokens(token: string, nodes: number): NodeTokens | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(token);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length !== nodes) return null;
  return parsed.every((entry) => entry === null || typeof entry === 'string') ? (parsed as NodeTokens) : null;
}

/**
 * The token to present on a node that gave none (it timed out, or failed after maybe running
 * the script): the agreeing nodes' token when they all gave the same one, else the owner, which
 * is what owner-keyed formats check.
 */
export function fallbackToken(tokens: NodeTokens, owner: string): string {
  const known = new Set(tokens.filter((token): token is string => token !== null));
  const [only] = known;
  return known.size === 1 && only !== undefined ? only : owner;
}

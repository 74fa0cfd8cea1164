/**
 * How a block is checked. `run`: typechecked, then run as a program that must exit 0 on its
 * own. `typecheck-only`: a server, a test file or a config, compiled but not run. `skip`: a
 * fragment that cannot compile on its own. The last two are chosen by a marker on the line
 * before the fence, and must say why: `<!-- readme-check: typecheck-only (a server) -->`.
 */
export type BlockMode = 'run' | 'typecheck-only' | 'skip';

export interface ReadmeBlock {
  /** The README, relative to the repository root. */
  readonly readme: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly code: string;
  readonly mode: BlockMode;
  /** Why the block is not run (the marker's parenthesised text). */
  readonly reason?: string;
}

/** A `readme-check` marker that is not one of the two forms, or gives no reason. */
export class MarkerError extends Error {
  override name = 'MarkerError';
}

const FENCE = /^(\s*)(`{3,})\s*([^\s`]*)[^`]*$/;
const MARKER = /^\s*<!--\s*readme-check:(.*?)-->\s*$/;
const MARKER_FORM = /^\s*(typecheck-only|skip)\s+\((.*\S.*)\)\s*$/;

function markerBefore(lines: readonly string[], fenceIndex: number, where: string) {
  const previous = lines[fenceIndex - 1];
  const marker = previous === undefined ? null : MARKER.exec(previous);
  if (!marker) return { mode: 'run' as const };
  const form = MARKER_FORM.exec(marker[1]!);
  if (!form) {
    throw new MarkerError(
      `${where}: bad marker ${JSON.stringify(previous?.trim())}: expected ` +
        '"<!-- readme-check: typecheck-only (why) -->" or "<!-- readme-check: skip (why) -->"',
    );
  }
  return { mode: form[1] as BlockMode, reason: form[2]!.trim() };
}

/** The ```ts blocks of one README, with their indentation (list items) removed. */
export function extractBlocks(readme: string, text: string): ReadmeBlock[] {
  const lines = text.split(/\r?\n/);
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent = '', ticks = '', language] = open;
    let end = i + 1;
    while (end < lines.length && !new RegExp(`^\\s*${ticks}\\s*$`).test(lines[end]!)) end++;
    if (language === 'ts' || language === 'typescript') {
      const code = lines
        .slice(i + 1, end)
        .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line.trimStart()))
        .join('\n');
      blocks.push({ readme, line: i + 1, code, ...markerBefore(lines, i, `${readme}:${i + 1}`) });
    } else if (MARKER.test(lines[i - 1] ?? '')) {
      throw new MarkerError(`${readme}:${i}: a readme-check marker before a non-ts block`);
    }
    i = end;
  }
  return blocks;
}

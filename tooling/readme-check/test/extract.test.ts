import { describe, expect, it } from 'vitest';
import { extractBlocks, MarkerError } from '../src/extract.ts';
import { importedPackages } from '../src/place.ts';

const fence = '```';

describe('extractBlocks', () => {
  it('takes ts blocks with their fence line, and the mode a marker gives', () => {
    const text = [
      '# Title',
      `${fence}sh`,
      'pnpm add x',
      fence,
      `${fence}ts`,
      'const a = 1;',
      fence,
      '<!-- readme-check: typecheck-only (a server) -->',
      `${fence}ts`,
      'listen();',
      fence,
    ].join('\n');
    expect(extractBlocks('R.md', text)).toEqual([
      { readme: 'R.md', line: 5, code: 'const a = 1;', mode: 'run' },
      { readme: 'R.md', line: 9, code: 'listen();', mode: 'typecheck-only', reason: 'a server' },
    ]);
  });

  it('removes a list item indentation and ignores ts fences shown inside a longer fence', () => {
    const text = [
      '- item',
      `  ${fence}ts`,
      '  if (x) {',
      '    y();',
      '  }',
      `  ${fence}`,
      '````md',
      `${fence}ts`,
      'no',
      fence,
      '````',
    ].join('\n');
    expect(extractBlocks('R.md', text).map((block) => block.code)).toEqual(['if (x) {\n  y();\n}']);
  });

  it('reads the language as the first word of the info string', () => {
    const text = [`${fence}ts title="a.ts"`, 'a();', fence, `${fence}js`, 'b();', fence].join('\n');
    expect(extractBlocks('R.md', text).map((block) => block.code)).toEqual(['a();']);
  });

  it('refuses a marker without a reason, of an unknown kind, or before a non-ts block', () => {
    for (const marker of [
      '<!-- readme-check: skip -->',
      '<!-- readme-check: skip () -->',
      '<!-- readme-check: ignore (x) -->',
    ]) {
      expect(() => extractBlocks('R.md', [marker, `${fence}ts`, 'x;', fence].join('\n'))).toThrow(
        MarkerError,
      );
    }
    expect(() =>
      extractBlocks('R.md', ['<!-- readme-check: skip (x) -->', `${fence}sh`, 'x', fence].join('\n')),
    ).toThrow(/R\.md:1: a readme-check marker before a non-ts block/);
  });
});

describe('importedPackages', () => {
  it('names the npm packages a block imports, not node: builtins, relative files or @lock/*', () => {
    const code = [
      "import Router from '@koa/router';",
      "import { createLocker } from '@lock/core';",
      "import type {\n  GraphQLResolveInfo,\n} from 'graphql';",
      "import { subscribe } from 'node:diagnostics_channel';",
      "import { defineConfig } from 'vitest/config';",
      "import './local.ts';",
    ].join('\n');
    expect(importedPackages(code)).toEqual(['@koa/router', 'graphql', 'vitest']);
  });
});

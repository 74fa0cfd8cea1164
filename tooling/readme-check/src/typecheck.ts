import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { EXTRACT_DIR } from './place.ts';

export interface Diagnostic {
  /** The file tsc named, relative to the repository root. */
  readonly file: string;
  readonly line: number;
  readonly text: string;
}

const DIAGNOSTIC = /^(.+?)\((\d+),\d+\): (error TS\d+: .*)$/;

/** tsc's `--pretty false` output as diagnostics; continuation lines join the one before. */
export function parseDiagnostics(output: string): Diagnostic[] {
  const diagnostics: { file: string; line: number; text: string }[] = [];
  for (const line of output.split('\n')) {
    const match = DIAGNOSTIC.exec(line);
    const last = diagnostics.at(-1);
    if (match) diagnostics.push({ file: match[1]!, line: Number(match[2]), text: match[3]! });
    else if (last && line.trim() !== '') last.text += `\n${line}`;
    else if (line.trim() !== '') diagnostics.push({ file: '', line: 0, text: line });
  }
  return diagnostics;
}

/**
 * `@lock/<name>` and its subpaths (`@lock/<name>/<sub>` for `src/<sub>/index.ts`, as in
 * tooling/vitest.shared.ts) resolve to the workspace sources, relative to `dir`.
 */
function workspacePaths(root: string, dir: string): Record<string, string[]> {
  const paths: Record<string, string[]> = {
    '@lock/*': [relative(dir, join(root, 'packages/*/src/index.ts'))],
  };
  for (const name of readdirSync(join(root, 'packages'))) {
    const src = join(root, 'packages', name, 'src');
    if (!existsSync(src)) continue;
    for (const sub of readdirSync(src)) {
      const entry = join(src, sub, 'index.ts');
      if (existsSync(entry)) paths[`@lock/${name}/${sub}`] = [relative(dir, entry)];
    }
  }
  return paths;
}

/**
 * `tsc --noEmit` over every extracted block, under the repository's strict settings, with
 * `@lock/*` resolved to the workspace sources. tsc reports only syntax errors when there are
 * any, which would hide the other blocks' type errors: so when blocks had errors, the rest
 * are checked once more without them.
 */
export async function typecheck(root: string, files: readonly string[]): Promise<Diagnostic[]> {
  const first = await runTsc(root, files);
  const failed = new Set(first.map((d) => resolve(root, d.file)));
  const rest = files.filter((file) => !failed.has(file));
  if (rest.length === files.length) return first;
  const seen = new Set(first.map((d) => JSON.stringify(d)));
  return [...first, ...(await runTsc(root, rest)).filter((d) => !seen.has(JSON.stringify(d)))];
}

/** One incremental tsc run over `files`, so a second run over the same ones is quick. */
function runTsc(root: string, files: readonly string[]): Promise<Diagnostic[]> {
  const dir = join(root, EXTRACT_DIR);
  mkdirSync(dir, { recursive: true });
  const fromDir = (path: string) => relative(dir, path);
  const config = {
    extends: fromDir(join(root, 'tsconfig.base.json')),
    compilerOptions: {
      incremental: true,
      tsBuildInfoFile: 'tsbuildinfo',
      paths: workspacePaths(root, dir),
    },
    files: [...files.map(fromDir), fromDir(join(root, 'tooling/lua.d.ts'))],
  };
  const project = join(dir, 'tsconfig.json');
  writeFileSync(project, `${JSON.stringify(config, null, 2)}\n`);
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      [tsc, '-p', project, '--pretty', 'false'],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        // tsc exits non-zero when it found errors: those are the answer, not a failure to run.
        if (error && stdout.trim() === '') fail(new Error(`tsc failed to run: ${stderr || error.message}`));
        else
          done(
            parseDiagnostics(stdout).map((d) => ({
              ...d,
              file: d.file && relative(root, resolve(root, d.file)),
            })),
          );
      },
    );
  });
}

import { chmodSync, lstatSync, mkdirSync } from 'node:fs';

/**
 * Creates `dir` (mode 0700), or checks that the one found is a directory of this user, and takes
 * any group or other access away from it: anyone may create a name in the temporary directory
 * first, and what this library keeps there (port reservations, the clock-skew shim it loads into
 * redis-server) must be this user's alone. Called on every use, so that a directory a tmp cleaner
 * removed mid-run comes back. `needs` starts the error, e.g. `port reservations need`.
 */
export function privateDir(dir: string, needs: string): string {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    // Something else has the name: the check below says what.
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const found = lstatSync(dir);
  const uid = process.getuid?.();
  const problem = !found.isDirectory()
    ? 'it is not a directory'
    : uid !== undefined && found.uid !== uid
      ? `it belongs to uid ${found.uid}`
      : undefined;
  if (problem)
    throw new Error(`${needs} a directory owned by this user at ${dir}, but ${problem}: remove it`);
  // Ours, so only this user (or root) made it accessible to others: close it again.
  if (found.mode & 0o077) chmodSync(dir, 0o700);
  return dir;
}

import { readFileSync } from 'node:fs';

/**
 * Whether `pid` is a live process. A zombie counts as dead: it runs nothing and holds no port,
 * and in containers nobody may reap an orphan quickly.
 */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the command name, which is in parentheses and may itself hold spaces.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The pid of every running process of `servers`, failing if one is not running. */
export function pidsOf(servers: readonly { pid: number | undefined; port: number }[]): number[] {
  return servers.map((server) => {
    if (server.pid === undefined) throw new Error(`server on port ${server.port} is not running`);
    return server.pid;
  });
}

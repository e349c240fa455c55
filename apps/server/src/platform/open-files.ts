import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Assumed when the limit cannot be read: the common soft limit, low enough to be safe. */
export const ASSUMED_OPEN_FILE_LIMIT = 1024;

/**
 * The `Max open files` soft limit in the text of /proc/self/limits (Linux): a number, Infinity
 * for `unlimited`, undefined when the line is not there.
 */
export function parseProcLimits(text: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  if (soft === 'unlimited') return Infinity;
  return soft !== undefined && /^\d+$/.test(soft) ? Number(soft) : undefined;
}

/**
 * How many files (sockets included) this process may have open: its soft RLIMIT_NOFILE, which
 * Node raises to the hard limit at start, so it is read here rather than taken from the shell
 * that started the process. Linux names it in /proc/self/limits; elsewhere `ulimit -n` in a
 * child shell, which inherits the limit. Node offers no getrlimit. When neither answers, the
 * common 1,024 is assumed, which errs towards refusing streams rather than running out of files.
 */
export function readOpenFileLimit(): { limit: number; source: string } {
  try {
    const limit = parseProcLimits(readFileSync('/proc/self/limits', 'utf8'));
    if (limit !== undefined) return { limit, source: '/proc/self/limits' };
  } catch {
    // Not Linux (or /proc is not mounted): ask a shell.
  }
  try {
    const answer = execFileSync('/bin/sh', ['-c', 'ulimit -n'], { encoding: 'utf8', timeout: 2000 }).trim();
    if (answer === 'unlimited') return { limit: Infinity, source: 'ulimit -n' };
    if (/^\d+$/.test(answer)) return { limit: Number(answer), source: 'ulimit -n' };
  } catch {
    // No shell: assume the common limit below.
  }
  return { limit: ASSUMED_OPEN_FILE_LIMIT, source: 'assumed' };
}

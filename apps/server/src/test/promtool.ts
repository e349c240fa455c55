import { spawnSync } from 'node:child_process';
import { missingTools } from '@sideport/ipa/test-support/system-tools';

/**
 * Prometheus's own checker of the text format, `promtool check metrics` (Debian's `prometheus`
 * package). Outside CI a machine without it skips the format checks with one line saying how to
 * get it; in CI (CI set) its absence fails the run, so the check can never be skipped there.
 */
export const hasPromtool = !missingTools('promtool');

/** promtool's verdict on an exposition: ok, and what it printed (its lint findings). */
export function promtoolCheck(exposition: string): { ok: boolean; output: string } {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  return { ok: run.status === 0, output: `${run.stdout}${run.stderr}`.trim() };
}

/** The value of the sample `name` whose labels include `labels`, from a text exposition; undefined when absent. */
export function sampleValue(
  exposition: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of exposition.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return undefined;
}

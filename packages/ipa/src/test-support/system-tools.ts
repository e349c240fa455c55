/**
 * The command-line tools some tests still run as outside checkers of what we write (a zip `unzip`
 * tests, a CMS `openssl` verifies, load commands `llvm-objdump` lists, an exposition `promtool`
 * checks). Node.js alone cannot stand in for them, so a machine without one cannot run those tests.
 *
 * Outside CI such a test file skips with one line saying which tool is missing and how to get it;
 * in CI (`CI` set) a missing tool fails the run instead, so CI can never pass by skipping.
 */
import { spawnSync } from 'node:child_process';

export type SystemTool = 'openssl' | 'unzip' | 'llvm-objdump' | 'promtool';

/** The names each tool is found under (Debian names LLVM's with their version) and its Debian package. */
const TOOLS: Record<SystemTool, { names: string[]; versionArgs: string[]; apt: string }> = {
  openssl: { names: ['openssl'], versionArgs: ['version'], apt: 'openssl' },
  unzip: { names: ['unzip'], versionArgs: ['-v'], apt: 'unzip' },
  'llvm-objdump': { names: ['llvm-objdump-14', 'llvm-objdump'], versionArgs: ['--version'], apt: 'llvm' },
  promtool: { names: ['promtool'], versionArgs: ['--version'], apt: 'prometheus' },
};

const found = new Map<SystemTool, boolean>();
const warned = new Set<string>();

/** Whether `tool` runs here, looked up once per process. */
export function hasTool(tool: SystemTool): boolean {
  let present = found.get(tool);
  if (present === undefined) {
    const { names, versionArgs } = TOOLS[tool];
    present = names.some((name) => spawnSync(name, versionArgs, { stdio: 'ignore' }).status === 0);
    found.set(tool, present);
  }
  return present;
}

/**
 * Why tests needing `tools` cannot run on this machine (one line, also printed once), or false
 * when every one is installed: `describe.skipIf(missingTools('openssl'))(...)`. Throws in CI.
 */
export function missingTools(...tools: SystemTool[]): string | false {
  const missing = tools.filter((tool) => !hasTool(tool));
  if (missing.length === 0) return false;
  const packages = [...new Set(missing.map((tool) => TOOLS[tool].apt))].join(' ');
  return cannotRun(`${missing.join(', ')} not installed (apt-get install ${packages})`);
}

/**
 * For what this machine lacks (`why`, with how to get it): outside CI, the one-line reason the
 * tests that need it skip with (printed once); in CI, throws, so they can never be skipped there.
 */
export function cannotRun(why: string): string {
  if (process.env.CI) throw new Error(`${why}: CI runs the tests that need it, it cannot skip them.`);
  const reason = `${why}: the tests that need it are skipped on this machine.`;
  if (!warned.has(reason)) {
    warned.add(reason);
    console.warn(reason);
  }
  return reason;
}

import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** missingTools('openssl', 'unzip') in a fresh Node process whose PATH holds none of the tools. */
function withoutTools(env: Record<string, string>) {
  const helper = new URL('./system-tools.ts', import.meta.url).href;
  const script = `const { missingTools } = await import(${JSON.stringify(helper)});
console.log(JSON.stringify(missingTools('openssl', 'unzip')));`;
  const { CI: _ci, ...inherited } = process.env;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...inherited, PATH: '', ...env },
    encoding: 'utf8',
  });
  return { status: run.status, stdout: run.stdout.trim(), stderr: run.stderr.trim() };
}

describe('missingTools', () => {
  it('outside CI, answers why and says it once on stderr, so the file skips', () => {
    const run = withoutTools({});
    const reason =
      'openssl, unzip not installed (apt-get install openssl unzip): the tests that need it are skipped on this machine.';
    expect(run).toEqual({ status: 0, stdout: JSON.stringify(reason), stderr: reason });
  });

  it('in CI, fails instead of skipping', () => {
    const run = withoutTools({ CI: 'true' });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain(
      'openssl, unzip not installed (apt-get install openssl unzip): CI runs the tests that need it, it cannot skip them.',
    );
  });
});

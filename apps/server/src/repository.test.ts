import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../../..');

describe('the repository as a user clones it', () => {
  it('installs only packages that run on the Node.js version the README asks for', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const minimum = /Node\.js (\d+\.\d+) or later/.exec(readme)?.[1];
    expect(minimum, 'the README names a minimum Node.js version').toBeDefined();
    const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as {
      packages: Record<string, { engines?: { node?: string } | string[]; optional?: boolean }>;
    };
    const refused = Object.entries(lock.packages)
      .filter(([name, entry]) => name !== '' && !Array.isArray(entry.engines) && entry.engines?.node)
      .filter(([, entry]) => !semver.satisfies(`${minimum}.0`, (entry.engines as { node: string }).node))
      .map(([name, entry]) => `${name} (node ${(entry.engines as { node: string }).node})`);
    expect(refused).toEqual([]);
  });

  it('reads nothing from outside the repository: no tracked file but the docs names a shared folder beside it', () => {
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
      .split('\0')
      .filter(Boolean);
    const pattern = new RegExp(['\\.\\./shared', '/shared/fix' + 'tures'].join('|'));
    const offending = tracked
      .filter((file) => !file.endsWith('.md') && !file.startsWith('fixtures/'))
      .filter((file) => pattern.test(readFileSync(path.join(root, file), 'latin1')));
    expect(offending).toEqual([]);
  });

  it('keeps the fixtures the tests read, each listed in fixtures/PROVENANCE.md', () => {
    const provenance = readFileSync(path.join(root, 'fixtures/PROVENANCE.md'), 'utf8');
    const files = execFileSync('git', ['ls-files', 'fixtures'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter((file) => file && !file.endsWith('PROVENANCE.md'));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) expect(provenance).toContain(`\`${file.slice('fixtures/'.length)}\``);
  });
});

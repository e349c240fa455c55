import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Every cross-reference resolves inside the repository: a clone has its README and docs/ and
 * nothing beside them. Relative markdown links (and their #headings) and every docs/ path a source
 * file cites must exist.
 */
const root = path.resolve(import.meta.dirname, '../../..');
const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter(Boolean);
const markdown = tracked.filter((file) => file.endsWith('.md') && !file.startsWith('fixtures/'));
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function anchorsOf(file: string): Set<string> {
  const text = read(file).replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} +(.+)$/gm)].map((m) => slug(m[1]!)));
}

/** Every [text](target) outside code blocks and code spans that is not a URL. */
function relativeLinks(file: string): string[] {
  const text = read(file)
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target));
}

describe('cross-references', () => {
  it('has every relative markdown link point to a file, and to a heading of it', () => {
    expect(markdown).toContain('README.md');
    const broken: string[] = [];
    for (const file of markdown) {
      for (const target of relativeLinks(file)) {
        const [where, anchor] = target.split('#') as [string, string | undefined];
        const resolved =
          where === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), where));
        if (!existsSync(path.join(root, resolved))) broken.push(`${file}: ${target} (no ${resolved})`);
        else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor))
          broken.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('has every docs/ file that code and docs cite exist', () => {
    const cited = tracked
      .filter((file) => /\.(ts|tsx|js|mjs|sh|md|json)$/.test(file) && !file.startsWith('fixtures/'))
      .flatMap((file) =>
        [...read(file).matchAll(/(?<![\w/.-])docs\/[\w./-]*[\w-]\.md\b/g)].map((m) => ({ file, doc: m[0] })),
      );
    expect(cited.length).toBeGreaterThan(10);
    const missing = cited
      .filter(({ doc }) => !existsSync(path.join(root, doc)))
      .map(({ file, doc }) => `${file}: ${doc}`);
    expect(missing).toEqual([]);
  });

  it('cites no document the repository does not hold', () => {
    // Built from pieces, so this file does not name them itself.
    const outside = new RegExp(['DESIGN' + '\\.md', '\\b[Ss]pec' + ' sections? \\d'].join('|'));
    const offending = tracked
      .filter((file) => /\.(ts|tsx|js|mjs|sh|md|json|yml|yaml)$/.test(file) || file === '.ci/run')
      .filter((file) => outside.test(read(file)));
    expect(offending).toEqual([]);
  });
});

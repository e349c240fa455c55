import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { IPA_ERRORS } from './errors.js';

const SRC = fileURLToPath(new URL('.', import.meta.url));

async function sources(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await sources(path)));
    else if (
      entry.name.endsWith('.ts') &&
      !entry.name.endsWith('.test.ts') &&
      path !== join(SRC, 'errors.ts')
    )
      found.push(path);
  }
  return found;
}

describe("the package's error codes", () => {
  it('throws only registered codes, and every registered code somewhere', async () => {
    const text = (await Promise.all((await sources(SRC)).map((f) => readFile(f, 'utf8')))).join('\n');
    const thrown = new Set([...text.matchAll(/new IpaError\(\s*'([A-Z0-9_]+)'/g)].map((m) => m[1]!));
    const registered = Object.keys(IPA_ERRORS);
    expect([...thrown].filter((code) => !registered.includes(code))).toEqual([]);
    // A code passed on to a helper that throws it counts as used.
    expect(registered.filter((code) => !text.includes(`'${code}'`))).toEqual([]);
  });

  it('says once, in one line, what each code means', () => {
    const meanings = Object.values(IPA_ERRORS);
    expect(new Set(meanings).size).toBe(meanings.length);
    for (const meaning of meanings) expect(meaning).toMatch(/^[A-Z"].*\.$/);
  });
});

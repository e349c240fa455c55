import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ERRORS, sentenceOf } from './error-codes.js';
import { AppError, fail, failWith } from './errors.js';

const SRC = fileURLToPath(new URL('..', import.meta.url));

async function sources(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== 'test') found.push(...(await sources(path)));
    else if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts'))
      found.push(path);
  }
  return found;
}

describe("the server's error codes", () => {
  it('raises only registered codes, and every registered code somewhere', async () => {
    const files = (await sources(SRC)).filter((f) => !f.endsWith(join('platform', 'error-codes.ts')));
    const text = (await Promise.all(files.map((f) => readFile(f, 'utf8')))).join('\n');
    const raised = new Set([...text.matchAll(/\b(?:fail|failWith)\(\s*'([A-Z0-9_]+)'/g)].map((m) => m[1]!));
    const registered = Object.keys(ERRORS);
    expect([...raised].filter((code) => !registered.includes(code))).toEqual([]);
    // A code can also be raised through a subclass (EnrollmentError, AscError's `ASC_${kind}`) or a table.
    const unused = registered.filter(
      (code) =>
        !text.includes(`'${code}'`) && !(code.startsWith('ASC_') && text.includes(`'${code.slice(4)}'`)),
    );
    expect(unused).toEqual([]);
  });

  it('gives each code one meaning: a fixed sentence belongs to one code only', () => {
    const fixed = Object.values(ERRORS)
      .map((e) => e.sentence)
      .filter((s): s is Extract<typeof s, string> => typeof s === 'string');
    expect(new Set(fixed).size).toBe(fixed.length);
    for (const [code, { status }] of Object.entries(ERRORS)) {
      expect(status >= 400 && status <= 599, code).toBe(true);
    }
  });

  it('takes the status from the registry and makes the sentence from the parts', () => {
    const missing = fail('NOT_FOUND', 'This agent');
    expect(missing).toBeInstanceOf(AppError);
    expect([missing.status, missing.code, missing.message]).toEqual([
      404,
      'NOT_FOUND',
      'This agent was not found.',
    ]);
    expect(fail('FEATHER_FAILED', 'The profile expired.').message).toBe(
      'Feather could not be signed: The profile expired. Please retry later.',
    );
    expect(fail('FEATHER_FAILED', null).message).toBe('Feather could not be signed. Please retry later.');
    const cause = new Error('socket hang up');
    const unreachable = failWith('STORE_UNREACHABLE', { cause });
    expect([unreachable.status, unreachable.cause]).toEqual([503, cause]);
    expect(fail('SIGNED_BEFORE_DEVICE').status).toBe(406);
    expect(sentenceOf('UPLOAD_TOO_LARGE', 10)).toBe('The IPA is larger than this server accepts (10 bytes).');
  });
});

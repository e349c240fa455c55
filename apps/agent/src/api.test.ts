import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { API_ERROR_KINDS, errorOfStatus, type ApiErrorKind } from './api.js';

describe("the agent's errors", () => {
  it('sorts every answer the server can give into the kind that decides what the agent does next', () => {
    const kinds: Record<number, ApiErrorKind> = {
      400: 'refused',
      401: 'unauthorized',
      403: 'refused',
      404: 'refused',
      408: 'transient',
      409: 'lease-lost',
      410: 'finished',
      413: 'refused',
      422: 'refused',
      429: 'transient',
      500: 'transient',
      503: 'transient',
    };
    for (const [status, kind] of Object.entries(kinds)) {
      const err = errorOfStatus(Number(status), 'The sentence.\n');
      expect(err.kind, `HTTP ${status}`).toBe(kind);
      expect(err.status).toBe(Number(status));
      expect(err.message).toContain('The sentence.');
    }
    expect(errorOfStatus(500, '').message).toBe('the server answered 500: HTTP 500');
  });

  it('raises only listed kinds, and every listed kind somewhere', async () => {
    const dir = fileURLToPath(new URL('.', import.meta.url));
    const sources = (await readdir(dir)).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    const raised = new Set<string>();
    for (const file of sources) {
      const text = await readFile(new URL(file, import.meta.url), 'utf8');
      for (const m of text.matchAll(/new ApiError\(\s*'([^']+)'/g)) raised.add(m[1]!);
    }
    expect([...raised].sort()).toEqual(Object.keys(API_ERROR_KINDS).sort());
  });
});

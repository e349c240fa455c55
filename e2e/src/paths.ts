import path from 'node:path';

export const repoRoot = path.resolve(import.meta.dirname, '../..');
export const fixturesDir = path.resolve(repoRoot, 'fixtures');

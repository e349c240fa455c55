import { openZip } from '../zip/index.js';
import { fixtureExecutablePath, fixtureIpa } from './fixtures.js';

/** Entries of the real fixture IPA, to rebuild variants of it in tests. */
export async function readFixtureEntries(): Promise<{ name: string; data: Buffer; mode?: number }[]> {
  const archive = await openZip(fixtureIpa);
  try {
    const result = [];
    for (const entry of archive.entries) {
      const data = entry.isDirectory ? Buffer.alloc(0) : await archive.readEntry(entry);
      result.push({
        name: entry.name,
        data,
        ...(entry.unixMode === undefined ? {} : { mode: entry.unixMode }),
      });
    }
    return result;
  } finally {
    archive.close();
  }
}

export async function readFixtureExecutable(): Promise<Buffer> {
  const entries = await readFixtureEntries();
  return entries.find((e) => e.name === fixtureExecutablePath)!.data;
}

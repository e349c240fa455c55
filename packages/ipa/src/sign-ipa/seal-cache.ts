/**
 * Each bundle's CodeResources kept as a template for the next sign of the same version
 * (resources/code-resources.ts, SealTemplate): of its thousands of entries only the ones signing
 * changes (the profile, signed nested code, the mode's files) differ from one user to the next,
 * so a later sign writes those few into the kept bytes (the package README, "The n-th sign of a version").
 *
 * One folder per cache: `seals/<key>.seal` holds a JSON line (format, body length, slots) and then
 * the body. The key is the version's resource digests' key (digest/cache.ts), the bundle, and the
 * paths whose entries change, each as a file or as nested code: the same key means the same
 * entries around them, with the same digests. The folder must only hold what this package wrote.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SealSlot, SealTemplate } from '../resources/index.js';

const FORMAT = 1;

interface Header {
  format: number;
  bodyBytes: number;
  slots: Array<[at: number, seal: SealSlot['seal'], path: string]>;
}

/** Where a bundle's template is kept; `changing` maps each path whose entry changes to its kind. */
export function sealTemplateFile(
  cacheDir: string,
  digestsKey: string,
  bundleDir: string,
  changing: ReadonlyMap<string, 'file' | 'code'>,
): string {
  const hash = createHash('sha256').update(`sideport-seal-${FORMAT}\n${digestsKey}\n${bundleDir}\n`);
  for (const path of [...changing.keys()].sort()) hash.update(`${path}\0${changing.get(path)}\n`);
  return join(cacheDir, 'seals', `${hash.digest('hex')}.seal`);
}

/** The kept template, when a sign before kept it whole; undefined otherwise. */
export async function readSealTemplate(file: string): Promise<SealTemplate | undefined> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch {
    return undefined; // absent: sealed in full, which keeps it
  }
  const end = bytes.indexOf(0x0a);
  let header: Header;
  try {
    header = JSON.parse(bytes.subarray(0, end).toString('utf8')) as Header;
  } catch {
    return undefined; // damaged: sealed in full, which keeps it again
  }
  const body = bytes.subarray(end + 1);
  if (header.format !== FORMAT || header.bodyBytes !== body.length || !Array.isArray(header.slots))
    return undefined;
  let last = 0;
  for (const [at] of header.slots) {
    if (!Number.isInteger(at) || at < last || at > body.length) return undefined;
    last = at;
  }
  return { body, slots: header.slots.map(([at, seal, path]) => ({ at, seal, path })) };
}

/** Keeps a template for the next sign (a cache that cannot be written only costs time). */
export async function keepSealTemplate(file: string, template: SealTemplate): Promise<void> {
  const header: Header = {
    format: FORMAT,
    bodyBytes: template.body.length,
    slots: template.slots.map((slot) => [slot.at, slot.seal, slot.path]),
  };
  // Written beside and renamed, so a concurrent reader never sees half a file.
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    await mkdir(join(file, '..'), { recursive: true });
    await writeFile(temporary, [Buffer.from(`${JSON.stringify(header)}\n`), template.body]);
    await rename(temporary, file);
  } catch {
    await rm(temporary, { force: true });
  }
}

/**
 * The copied part of a version's signed IPA, kept for the next sign. Every sign of a version in a
 * mode starts its output with the same bytes: the entries signing leaves as they are, copied in
 * archive order with their own headers and times (zip/writer.ts). Kept once, that stretch starts
 * the next output as a copy made by the kernel (copy_file_range, or a reflink on file systems that
 * share blocks), so the n-th sign reads none of it; only the signed code, seals and profile that
 * follow it are written (the package README, "The n-th sign of a version").
 *
 * `copies/<key>.zip-prefix` in the cache folder; the key is the archive's entries (as the
 * resource digests' key) and the names signing rewrites, so another mode's stretch is another
 * file. Made by the first sign that found the version's digests kept: a version signed once
 * costs no copy more, and the disk it takes (about one IPA per version and mode) is spent on
 * versions signed again.
 */
import { createHash, randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { versionKey } from '../digest/index.js';
import { fileIdentity } from '../zip/entry-table.js';
import type { ZipEntry } from '../zip/index.js';
import { startPrefixCopy, type StartedCopy } from '../zip/output-file.js';

const FORMAT = 1;
const STALE_CLAIM_MS = 10 * 60 * 1000;

/** Creates the claim file, or takes over one left by a sign that stopped; false when another holds it. */
async function claimKeeping(claim: string): Promise<boolean> {
  try {
    await writeFile(claim, String(process.pid), { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const { mtimeMs } = await stat(claim);
    if (Date.now() - mtimeMs < STALE_CLAIM_MS) return false;
    await writeFile(claim, String(process.pid));
    return true;
  }
}

export interface CopyTemplate {
  /** The kept stretch, when there is one of exactly `bytes`. */
  find(): Promise<string | undefined>;
  /** Keeps the first `bytes` of a signed output as the stretch (a cache that cannot be written only costs time). */
  keep(output: string): Promise<void>;
}

export function copyTemplate(
  cacheDir: string,
  entries: readonly ZipEntry[],
  rewritten: ReadonlySet<string>,
  bytes: number,
): CopyTemplate {
  const key = createHash('sha256')
    .update(`sideport-copy-${FORMAT}\n${versionKey(entries)}\n`)
    .update([...rewritten].sort().join('\0'))
    .digest('hex');
  const file = join(cacheDir, 'copies', `${key}.zip-prefix`);
  return {
    async find() {
      try {
        return (await stat(file)).size === bytes ? file : undefined;
      } catch {
        return undefined;
      }
    },
    async keep(output) {
      // Many signs of a popular version start before any has kept the stretch: one keeps it, the
      // others go on (a claim older than a sign can take is a crashed one's, and is taken over).
      const claim = `${file}.keeping`;
      const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
      try {
        await mkdir(join(cacheDir, 'copies'), { recursive: true });
        if (!(await claimKeeping(claim))) return;
        try {
          await copyFile(output, temporary);
          await truncate(temporary, bytes);
          await rename(temporary, file);
        } finally {
          await rm(claim, { force: true });
        }
      } catch {
        await rm(temporary, { force: true });
      }
    },
  };
}

/**
 * Which kept stretch the last sign of this very file in this mode started from, so the next one
 * starts copying it before it opens the archive: opening, planning and keying the stretch took
 * 0.2-0.3 s of a 1 GB IPA's n-th sign, during which the kernel could already copy.
 *
 * `copy-ahead/<mode>` in the cache folder (one note per mode, `modeKey` its names) holds the
 * input file's identity on disk (fileIdentity, zip/entry-table.ts) and the stretch's name. A
 * source fetched afresh for each sign (from object storage) never matches, and replaces the note
 * rather than adding one. The stretch it names is only a guess: the sign still keys its stretch
 * from the archive and takes the copy only when the two are the same file, else drops it.
 */
export interface CopyAhead {
  /** The copy of the stretch last used for this file and mode, started now; undefined when none is noted. */
  start(output: string): Promise<StartedCopy | undefined>;
  /** Notes `template` as this file and mode's stretch (a cache that cannot be written only costs time). */
  note(template: string): Promise<void>;
}

const STRETCH_NAME = /^[0-9a-f]{64}\.zip-prefix$/;

/** Undefined when the input cannot be looked at: opening it then says why. */
export async function copyAhead(
  cacheDir: string,
  input: string,
  modeKey: string,
): Promise<CopyAhead | undefined> {
  const file = await stat(input).catch(() => undefined);
  if (file === undefined) return undefined;
  const sha256 = (value: unknown) => createHash('sha256').update(JSON.stringify(value)).digest('hex');
  const identity = sha256([FORMAT, ...fileIdentity(file)]);
  const folder = join(cacheDir, 'copy-ahead');
  const noteFile = join(folder, sha256([FORMAT, modeKey]));
  return {
    async start(output) {
      const [noted, named] = (await readFile(noteFile, 'utf8').catch(() => '')).split('\n');
      if (noted !== identity || named === undefined || !STRETCH_NAME.test(named)) return undefined;
      return startPrefixCopy(join(cacheDir, 'copies', named), output);
    },
    async note(template) {
      const temporary = `${noteFile}.${randomBytes(6).toString('hex')}.tmp`;
      try {
        await mkdir(folder, { recursive: true });
        await writeFile(temporary, `${identity}\n${basename(template)}`);
        await rename(temporary, noteFile);
      } catch {
        await rm(temporary, { force: true });
      }
    },
  };
}

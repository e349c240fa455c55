import { chmodSync, lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * DATA_DIR holds the embedded database (the download URL key, password hashes, sealed keys, in its
 * files and WAL), the secret key and every stored IPA: it is the server user's alone, folders 0700
 * and files 0600 (docs/security.md, Data at rest). Three things keep it so:
 * - the server and the CLI set this umask first thing, so what they and their children create is
 *   made without group and other bits;
 * - PGlite's file system sets modes of its own (0666 for the files initdb makes), so the embedded
 *   database's modes are masked as it sets them (db/client.ts);
 * - at start, `secureDataDir` takes group and other bits off what Sideport keeps there (a folder
 *   an older version or another tool made), and logs a warning that says what it changed. What
 *   else the folder holds is not Sideport's and is left as it is (DATA_DIR set to a folder of
 *   other things by mistake, a volume's lost+found).
 */
export const OWNER_ONLY_UMASK = 0o077;

/**
 * What Sideport keeps at the top of DATA_DIR: the embedded database, stored files, the secret key,
 * the control socket's folder, temporary files, the sign cache and the demo agent's folder.
 */
export const DATA_DIR_ENTRIES: ReadonlySet<string> = new Set([
  'db',
  'files',
  'secret-key',
  'run',
  'tmp',
  'sign-cache',
  'agent',
]);

/** Group and other permission bits. */
const GROUP_OTHER = 0o077;

export interface DataDirReport {
  /** Files and folders whose group/other bits were taken off. */
  fixed: number;
  /** Those that could not be changed (another owner), with the first error. */
  failed: number;
}

interface WarnLog {
  warn(obj: object, msg: string): void;
}

/**
 * Every entry under `dir` (not following links) and `dir` itself: its path and mode. At the top of
 * `dir`, only the entries `isOurs` names are gone into.
 */
function* walk(
  dir: string,
  isOurs: (name: string) => boolean,
): Generator<{ file: string; mode: number; isDirectory: boolean }> {
  const root = statSync(dir);
  yield { file: dir, mode: root.mode, isDirectory: root.isDirectory() };
  if (!root.isDirectory()) return;
  const folders = [dir];
  for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
    let names: string[];
    try {
      names = readdirSync(folder);
    } catch {
      continue; // removed meanwhile, or not ours to read: the chmod of the folder said so already
    }
    for (const name of names) {
      if (folder === dir && !isOurs(name)) continue;
      const file = path.join(folder, name);
      let stat;
      try {
        stat = lstatSync(file);
      } catch {
        continue; // removed meanwhile (a temporary file)
      }
      // A link's own mode means nothing on Linux, and what it points at is not DATA_DIR's.
      if (stat.isSymbolicLink()) continue;
      yield { file, mode: stat.mode, isDirectory: stat.isDirectory() };
      if (stat.isDirectory()) folders.push(file);
    }
  }
}

/**
 * Takes group and other bits off `dir` and everything in it (at its top, only what `isOurs` names);
 * counts what it changed and could not.
 */
export function restrictToOwner(
  dir: string,
  isOurs: (name: string) => boolean = () => true,
): DataDirReport & { example?: string; error?: string } {
  const report: DataDirReport & { example?: string; error?: string } = { fixed: 0, failed: 0 };
  for (const { file, mode } of walk(dir, isOurs)) {
    if ((mode & GROUP_OTHER) === 0) continue;
    try {
      chmodSync(file, mode & 0o7777 & ~GROUP_OTHER);
      report.fixed++;
      report.example ??= `${file} was ${(mode & 0o777).toString(8).padStart(4, '0')}`;
    } catch (err) {
      report.failed++;
      report.error ??= `${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
    }
  }
  return report;
}

/**
 * At start: makes DATA_DIR (0700) when `create` and it is missing, then makes it and what Sideport
 * keeps in it (DATA_DIR_ENTRIES) the server user's alone, warning when anything was readable or
 * writable by group or others. Nothing else in the folder is changed.
 */
export function secureDataDir(dir: string, log: WarnLog, options: { create: boolean }): DataDirReport {
  try {
    statSync(dir);
  } catch {
    if (!options.create) return { fixed: 0, failed: 0 };
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }
  const report = restrictToOwner(dir, (name) => DATA_DIR_ENTRIES.has(name));
  if (report.fixed > 0) {
    log.warn(
      { dataDir: dir, fixed: report.fixed },
      `DATA_DIR ${dir} held ${report.fixed} files or folders that other users could read or write ` +
        `(${report.example}); they are now this user's alone (folders 0700, files 0600).`,
    );
  }
  if (report.failed > 0) {
    log.warn(
      { dataDir: dir, failed: report.failed },
      `DATA_DIR ${dir} holds ${report.failed} files or folders that other users can read or write and ` +
        `this process could not change (${report.error}). As their owner, run: chmod -R go-rwx '${dir}'`,
    );
  }
  return { fixed: report.fixed, failed: report.failed };
}

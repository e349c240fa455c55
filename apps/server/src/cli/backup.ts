import { createReadStream, createWriteStream, existsSync, readdirSync, statSync } from 'node:fs';
import { readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { openDatabase } from '../db/client.js';
import { restoreBackup, verifyBackup, writeBackup, type BackupSummary } from '../platform/backup.js';
import { openConfiguredDatabase } from '../platform/bootstrap.js';
import type { Config } from '../platform/config.js';
import { requestBackup } from '../platform/control-socket.js';
import { secureDataDir } from '../platform/data-dir.js';
import { cli, commandConfig } from './context.js';

/** `backup` and `restore` cover the embedded default; PostgreSQL and S3 have their own tools. */
function refuseScaled(config: Config, command: string) {
  const what = [
    config.DATABASE_URL ? 'DATABASE_URL (use pg_dump)' : '',
    config.STORAGE_URL ? 'STORAGE_URL (copy the bucket)' : '',
  ]
    .filter(Boolean)
    .join(' and ');
  if (what) {
    throw new InvalidArgumentError(
      `sideport ${command} covers the embedded database and files in DATA_DIR; with ${what} see the README's Backups section.`,
    );
  }
}

const describeBackup = (summary: BackupSummary) =>
  `the database (${summary.databaseBytes} bytes) and ${summary.files} stored files (${summary.fileBytes} bytes)`;

/** `sideport backup` and `sideport restore`: the embedded database and DATA_DIR's files, whole. */
export function addBackupCommands(program: Command) {
  program
    .command('backup')
    .description(
      'write a snapshot of the embedded database and its files to <file> (the server may be running)',
    )
    .argument('<file>', 'the backup file to write (it holds secrets: it is made readable by its owner only)')
    .action(async (file: string) => {
      const config = commandConfig({ secure: false });
      refuseScaled(config, 'backup');
      secureDataDir(config.DATA_DIR, cli.log, { create: false });
      const target = path.resolve(file);
      if (existsSync(target))
        throw new InvalidArgumentError(`There is already a file at ${target}; name a new one.`);
      // Written aside and renamed when whole and checked: a file at `target` is always a whole backup.
      const partial = `${target}.partial-${process.pid}`;
      try {
        const out = () => createWriteStream(partial, { flags: 'wx', mode: 0o600 });
        const fromServer = await requestBackup(config.DATA_DIR);
        if (fromServer) {
          cli.log.info({ dataDir: config.DATA_DIR }, 'backup: the server is running; it writes the snapshot');
          await pipeline(fromServer, out());
        } else {
          // No server: this process opens the folder itself (refused, naming the holder, if one does hold it).
          const database = await openConfiguredDatabase(config);
          try {
            await writeBackup(
              { dataDir: config.DATA_DIR, dumpDatabase: () => database.dumpDataDir!() },
              out(),
            );
          } finally {
            await database.close();
          }
        }
        const summary = await verifyBackup(partial);
        await rename(partial, target);
        cli.log.info({ file: target, viaServer: fromServer !== undefined, ...summary }, 'backup written');
        console.log(
          `Backup written to ${target}: ${describeBackup(summary)}. It holds secrets: keep it private.`,
        );
      } catch (err) {
        await rm(partial, { force: true });
        throw err;
      }
    });

  program
    .command('restore')
    .description('restore a backup made by sideport backup into an empty DATA_DIR')
    .argument('<file>', 'the backup file')
    .action(async (file: string) => {
      // Restore changes nothing in a folder it refuses; what it writes is made private as it is written.
      const config = commandConfig({ secure: false });
      refuseScaled(config, 'restore');
      if (!statSync(file, { throwIfNoEntry: false })?.isFile())
        throw new InvalidArgumentError(`There is no file at ${file}.`);
      const dir = config.DATA_DIR;
      const present = existsSync(dir) ? readdirSync(dir) : [];
      if (present.length > 0) {
        throw new InvalidArgumentError(
          `DATA_DIR ${dir} is not empty: restore fills an empty folder only. Move it aside or set DATA_DIR to a new folder.`,
        );
      }
      // Empty (or missing): made the user's alone before anything is written into it.
      secureDataDir(dir, cli.log, { create: true });
      try {
        const summary = await restoreBackup(createReadStream(file), dir, async (pgliteDir) => {
          const database = await openDatabase({ pgliteDir });
          await database.close();
        });
        cli.log.info({ file: path.resolve(file), dataDir: dir, ...summary }, 'backup restored');
        console.log(`Restored ${describeBackup(summary)} into ${dir}. Start the server on it.`);
      } catch (err) {
        // The folder was empty: what is in it now is this restore's, and half a restore is of no use.
        for (const name of await readdir(dir))
          await rm(path.join(dir, name), { recursive: true, force: true });
        throw err;
      }
    });
}

import {
  createReadStream,
  createWriteStream,
  existsSync,
  readdirSync,
  readFileSync,
  statSync,
} from 'node:fs';
import { readdir, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { COUNTRIES, createAgentRequest, userId } from '@sideport/contracts';
import { DataFolderInUseError, openDatabase } from './db/client.js';
import { DEMO_DATA_DIR } from './dev/demo-data.js';
import { startItunesServer } from './dev/itunes-server.js';
import { simulateDevice, simulationDeps, type SimulatedEnrollment } from './modules/devices/simulate.js';
import { serveMetrics } from './modules/metrics/routes.js';
import { createSideportMetrics } from './modules/metrics/service.js';
import { restoreBackup, verifyBackup, writeBackup, type BackupSummary } from './platform/backup.js';
import { ADMIN_GRADE, md5Hex, openConfiguredDatabase } from './platform/bootstrap.js';
import { ConfigError, loadConfig, type Config } from './platform/config.js';
import { ControlRefusal, requestBackup, requestSimulateDevice } from './platform/control-socket.js';
import { AppError, fail } from './platform/errors.js';
import { OWNER_ONLY_UMASK, secureDataDir } from './platform/data-dir.js';
import { createProcessLogger, logProcessWarnings } from './platform/logger.js';
import { createScheduler } from './platform/scheduler.js';
import { periodicTasks, stopServices } from './lifecycle.js';
import {
  createAccountServices,
  createCoreServices,
  createPeopleServices,
  type AccountServices,
  type CoreServices,
  type ServiceDeps,
} from './services.js';

// What a command and its children create is the operator's alone (docs/security.md, Data at rest).
process.umask(OWNER_ONLY_UMASK);

/**
 * Operator commands. They read the same environment as the server (DATA_DIR or DATABASE_URL).
 * Every log line is JSON (pino), on stderr: stdout carries what a command answers (a token, a
 * table). `worker` runs as a service and logs to stdout, as the server does.
 */
const cli = { log: createProcessLogger({ LOG_LEVEL: 'info' }, 2) };
logProcessWarnings(() => cli.log);

/**
 * The configuration, and the log level it names (until it is read, the level is info). With
 * `secure`, what Sideport keeps in DATA_DIR is made the user's alone; a command that checks the
 * folder first (backup, restore) passes false and secures it once the check passed, if at all.
 */
function commandConfig({ secure = true }: { secure?: boolean } = {}): Config {
  const config = loadConfig();
  cli.log.level = config.LOG_LEVEL;
  if (secure) secureDataDir(config.DATA_DIR, cli.log, { create: false });
  return config;
}

/** The configuration and a migrated database, as the composition root (services.ts) takes them, for `fn`. */
async function withDatabase<T>(fn: (deps: ServiceDeps) => Promise<T>): Promise<T> {
  const config = commandConfig();
  const database = await openConfiguredDatabase(config);
  try {
    await database.migrate();
    return await fn({ config, database, clock: () => new Date(), log: cli.log });
  } finally {
    await database.close();
  }
}

/** The accounts' services: the same the API uses. */
function withAuth<T>(fn: (auth: AccountServices['auth']) => Promise<T>): Promise<T> {
  return withDatabase((deps) => fn(createAccountServices(deps).auth));
}

/** The services an operator command acts through: the same the admin API uses. */
function withServices<T>(fn: (services: CoreServices) => Promise<T>): Promise<T> {
  return withDatabase(async (deps) => {
    const services = await createCoreServices(deps);
    try {
      return await fn(services);
    } finally {
      await services.bus.close();
    }
  });
}

/** Who the audit log names for what an operator did from the command line. */
const CLI_ACTOR = 'operator (cli)';

const storeId = (value: string) => {
  if (!/^[1-9]\d{0,15}$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError('must be a positive whole number');
  return Number(value);
};

const country = (value: string) => {
  const upper = value.toUpperCase();
  if (!(COUNTRIES as readonly string[]).includes(upper))
    throw new InvalidArgumentError(`must be one of ${COUNTRIES.join(', ')}`);
  return upper;
};

const integer = (value: string) => {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number');
  return Number(value);
};

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

/** Commander's refusal (`error: unknown option '--x'`) as a sentence: `Unknown option '--x'.` */
const asSentence = (text: string) => {
  const said = text
    .trim()
    .replace(/^error: /, '')
    .replace(/\. ([a-z])/, ': $1');
  const sentence = said.charAt(0).toUpperCase() + said.slice(1);
  return /[.!?]$/.test(sentence) ? sentence : `${sentence}.`;
};
/** Set when Commander has printed a refusal and the usage: the catch below adds nothing. */
let usagePrinted = false;

const program = new Command('sideport')
  .description('Sideport operator commands')
  .version(version, '-v, --version', 'print the version')
  .option('--demo', "work on the data of `npm run demo` (the repository's ./data-demo) instead of DATA_DIR");
// Commander's own refusals (an unknown option, a missing argument) are one sentence and the
// command's usage on stderr, exit 2, like every refusal below; subcommands made after this inherit it.
program
  .exitOverride()
  .showHelpAfterError('Usage: sideport [options] <command>\nRun npx sideport --help for the commands.')
  .configureOutput({
    outputError: (text, write) => {
      usagePrinted = true;
      write(`${asSentence(text)}\n`);
    },
  });
// `--demo` before or after the command: the demo is always the embedded database in its own folder.
program.hook('preAction', () => {
  if (program.opts<{ demo?: boolean }>().demo) {
    if (!existsSync(DEMO_DATA_DIR))
      throw new InvalidArgumentError(
        `There is no demo data in ${DEMO_DATA_DIR}: start the demo first with npm run demo.`,
      );
    process.env.DATA_DIR = DEMO_DATA_DIR;
    delete process.env.DATABASE_URL;
    delete process.env.STORAGE_URL;
  }
});

program
  .command('migrate')
  .description('apply database migrations (the server also applies them at start)')
  .action(async () => {
    const config = commandConfig();
    const database = await openConfiguredDatabase(config);
    try {
      await database.migrate();
    } finally {
      await database.close();
    }
    console.log(`Migrations applied to ${database.description}.`);
  });

program
  .command('user:grade')
  .description('set a user grade (above 0 is admin, 0 a normal user)')
  .argument('<id>', 'user id')
  .argument('<grade>', 'grade', integer)
  .action(async (id: string, grade: number) => {
    const found = await withAuth((auth) => auth.setGrade(id, grade));
    if (!found) throw fail('NO_SUCH_USER', id);
    console.log(`User ${id} now has grade ${grade}.`);
  });

program
  .command('user:create')
  .description('create a user, or reset its password and grade when it exists')
  .argument('<id>', 'user id')
  .requiredOption('--password-env <VAR>', 'environment variable holding the password')
  .option('--grade <n>', 'grade', integer, 0)
  .action(async (id: string, options: { passwordEnv: string; grade: number }) => {
    const checked = userId.safeParse(id);
    const password = process.env[options.passwordEnv];
    if (!checked.success) throw new InvalidArgumentError(checked.error.issues[0]?.message ?? 'bad id');
    if (!password || password.length < 8)
      throw new InvalidArgumentError(`Set ${options.passwordEnv} to a password of at least 8 characters.`);
    await withAuth((auth) => auth.ensureUser(id, md5Hex(password), options.grade));
    console.log(
      `User ${id} is ready with grade ${options.grade}${options.grade >= ADMIN_GRADE ? ' (admin)' : ''}.`,
    );
  });

program
  .command('agent:create')
  .description('make a decrypt agent and print its token (shown only this once)')
  .argument('<name>', 'a name to know it by (the machine, say)')
  .action(async (name: string) => {
    const checked = createAgentRequest.safeParse({ name });
    if (!checked.success) throw new InvalidArgumentError(checked.error.issues[0]?.message ?? 'bad name');
    const made = await withServices(async ({ agents, audit }) => {
      const agent = await agents.create(checked.data.name);
      await audit.record(CLI_ACTOR, 'create-agent', { id: agent.id, name: agent.name });
      return agent;
    });
    console.log(
      `Agent ${made.id} (${made.name}) is made. Its token, shown only this once:\n\n  ${made.token}\n`,
    );
    console.log(
      `On the agent's machine: SIDEPORT_AGENT_TOKEN=<token> npx sideport-agent --server <this server's URL> --command '<your command>'`,
    );
  });

program
  .command('agent:list')
  .description('list the decrypt agents: last seen, current job, done and failed counts')
  .action(async () => {
    const list = await withServices(({ agents }) => agents.list());
    if (list.length === 0) return console.log('No agents. Make one with: npx sideport agent:create <name>');
    const rows = [
      ['id', 'name', 'last seen', 'current job', 'done', 'failed'],
      ...list.map((a) => [
        a.id,
        a.name,
        a.last_seen_at ?? 'never',
        a.current_job ?? '-',
        String(a.done_count),
        String(a.failed_count),
      ]),
    ];
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
    for (const row of rows)
      console.log(
        row
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join('  ')
          .trimEnd(),
      );
  });

program
  .command('agent:revoke')
  .description("revoke a decrypt agent's token; its jobs go back to the queue at once")
  .argument('<id>', 'agent id (see agent:list)', storeId)
  .action(async (id: number) => {
    const revoked = await withServices(async ({ agents, audit }) => {
      const agent = await agents.revoke(id);
      await audit.record(CLI_ACTOR, 'revoke-agent', { id: String(agent.id), name: agent.name });
      return agent;
    });
    console.log(`Agent ${revoked.id} (${revoked.name}) is revoked: its token no longer works.`);
  });

program
  .command('ipa:import')
  .description(
    "store the operator's own decrypted IPA as a Done version, through the same check as an agent's upload",
  )
  .argument('<file>', 'the decrypted .ipa')
  .requiredOption('--country <cc>', `store country (${COUNTRIES.join(', ')})`, country)
  .option('--app-id <n>', "the store's app id (default: the app of the IPA's bundle id)", storeId)
  .option(
    '--app-ver-id <n>',
    "the store's version id (default: iTunesMetadata.plist's softwareVersionExternalIdentifier)",
    storeId,
  )
  .action(async (file: string, options: { country: string; appId?: number; appVerId?: number }) => {
    if (!statSync(file, { throwIfNoEntry: false })?.isFile())
      throw new InvalidArgumentError(`There is no file at ${file}.`);
    const done = await withServices(({ jobs }) =>
      jobs.importIpa(file, {
        country: options.country,
        ...(options.appId !== undefined ? { appId: options.appId } : {}),
        ...(options.appVerId !== undefined ? { appVerId: options.appVerId } : {}),
      }),
    );
    console.log(
      `${done.name} ${done.version} (app_id ${done.app_id}, app_ver_id ${done.app_ver_id}, ${done.country}) is Done: ${done.size_bytes} bytes stored.`,
    );
  });

program
  .command('device:simulate')
  .description(
    'enroll a simulated iPhone for a user through the real enrollment path and print its UDID (dev identity only)',
  )
  .argument('<user-id>', 'the account that gets the device')
  .option(
    '--paid',
    'pay for it on the test-mode checkout, so it is registered at once (test-mode billing only)',
  )
  .action(async (userId: string, options: { paid?: boolean }) => {
    const paid = options.paid === true;
    const config = commandConfig();
    // A server running on the embedded database holds it: it enrolls the device itself.
    const viaServer = config.DATABASE_URL
      ? undefined
      : ((await requestSimulateDevice(config.DATA_DIR, { userId, paid })) as SimulatedEnrollment | undefined);
    const made =
      viaServer ??
      (await withDatabase(async (deps) => {
        const accounts = createAccountServices(deps);
        const core = await createCoreServices(deps);
        try {
          const people = createPeopleServices(deps, accounts, core);
          return await simulateDevice(
            simulationDeps({ ...core, ...people, auth: accounts.auth }, deps.config),
            userId,
            { paid },
          );
        } finally {
          await core.bus.close();
        }
      }));
    console.log(`${made.deviceName} (${made.product}) enrolled for ${userId}: ${made.status}.`);
    console.log(
      made.status === 'Registered'
        ? 'Sign a Done version for it from its version list.'
        : 'Register it on My page (Device tab), or run this again with --paid.',
    );
    console.log(made.udid);
  });

program
  .command('worker')
  .description('run sign workers against this database and storage until stopped (SIGINT or SIGTERM)')
  .option('--workers <n>', 'signs at once in this process (default: SIGN_WORKERS, at least 1)', integer)
  .action(async (options: { workers?: number }) => {
    // A service: its log goes to stdout, as the server's does.
    cli.log = createProcessLogger({ LOG_LEVEL: 'info' }, 1);
    const config = commandConfig();
    const log = cli.log;
    const count = options.workers ?? Math.max(1, config.SIGN_WORKERS);
    if (count < 1 || count > 64) throw new InvalidArgumentError('--workers must be from 1 to 64');
    const database = await openConfiguredDatabase(config);
    await database.migrate();
    const clock = () => new Date();
    const metrics = createSideportMetrics({
      db: database.db,
      clock,
      decryptLeaseSeconds: config.DECRYPT_LEASE_SECONDS,
      log,
    });
    const services = await createCoreServices({ config, database, clock, log }, metrics.service);
    const served =
      config.METRICS_PORT === undefined
        ? undefined
        : await serveMetrics({
            host: config.HOST,
            port: config.METRICS_PORT,
            token: config.METRICS_TOKEN,
            metrics,
            log,
          });
    services.signWorkers.start(count);
    // The API's periodic work that applies here: the sign lease sweep and the file sweep.
    const scheduler = createScheduler(periodicTasks(config, { role: 'worker', services }), log);
    scheduler.start();
    log.info(
      {
        workers: count,
        database: database.description,
        storage: services.files.description,
        metrics: served?.url ?? null,
      },
      `Sign worker started: ${count} at once, ${database.description}, storage ${services.files.description}` +
        (served ? `, metrics on ${served.url}.` : '.'),
    );
    const signal = await new Promise<string>((resolve) => {
      process.once('SIGINT', () => resolve('SIGINT'));
      process.once('SIGTERM', () => resolve('SIGTERM'));
    });
    log.info({ signal }, 'Stopping: signs under way go back to the queue.');
    await stopServices(services, scheduler, served);
    await database.close();
  });

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
          await writeBackup({ dataDir: config.DATA_DIR, dumpDatabase: () => database.dumpDataDir!() }, out());
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
      for (const name of await readdir(dir)) await rm(path.join(dir, name), { recursive: true, force: true });
      throw err;
    }
  });

program
  .command('itunes:serve')
  .description(
    'serve recorded iTunes Search/Lookup answers locally (offline demos; set ITUNES_BASE_URL to its URL)',
  )
  .argument(
    '<answers...>',
    'iTunes answer files ({"resultCount", "results"}); their results are searched by term',
  )
  .option('--port <n>', 'port', integer, 8089)
  .action(async (files: string[], options: { port: number }) => {
    const records = files.flatMap((file) => {
      const body = JSON.parse(readFileSync(file, 'utf8')) as { results?: Array<Record<string, unknown>> };
      return body.results ?? [];
    });
    const server = await startItunesServer({ records, port: options.port });
    console.log(
      `iTunes wire-format server with ${records.length} records on ${server.url} (Ctrl-C stops it)`,
    );
  });

// After a command's refusal, its own usage line rather than the whole help.
for (const command of program.commands) {
  command.showHelpAfterError(
    `Usage: sideport ${command.name()} ${command.usage()}\nRun npx sideport ${command.name()} --help for its options.`,
  );
}

/**
 * A refusal: what the operator asked cannot be done as asked (an unknown user, a bad value, the
 * database held by a running server). One sentence on stderr, exit 2; anything else is a failure,
 * logged as JSON with its stack, exit 1.
 */
function refusalOf(err: unknown): string | undefined {
  if (err instanceof AppError) return err.status < 500 ? err.message : undefined;
  if (err instanceof DataFolderInUseError) {
    const who = err.holderPid ? `process ${err.holderPid}` : 'another process';
    return (
      `The database in ${process.env.DATA_DIR ?? './data'} is in use by ${who} (a running server): ` +
      'stop it and run this again; backup and device:simulate work beside it.'
    );
  }
  if (err instanceof InvalidArgumentError || err instanceof ConfigError || err instanceof ControlRefusal)
    return err.message;
  return undefined;
}

const USAGE_ERROR = 2;

try {
  await program.parseAsync();
} catch (err) {
  const refusal = refusalOf(err);
  if (err instanceof CommanderError && err.exitCode === 0) {
    // --help or --version: already printed.
  } else if (usagePrinted || refusal !== undefined || err instanceof CommanderError) {
    // Bare `sideport` has printed its help; anything else says its one sentence now.
    if (!usagePrinted && !(err instanceof CommanderError && err.code === 'commander.help'))
      process.stderr.write(`${refusal ?? asSentence((err as Error).message)}\n`);
    process.exitCode = USAGE_ERROR;
  } else {
    cli.log.error({ err }, err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  }
}

import { existsSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { COUNTRIES, createAgentRequest, userId } from '@sideport/contracts';
import { addBackupCommands } from './cli/backup.js';
import {
  CLI_ACTOR,
  cli,
  commandConfig,
  country,
  integer,
  storeId,
  withAuth,
  withDatabase,
  withServices,
} from './cli/context.js';
import { addWorkerCommand } from './cli/worker.js';
import { DataFolderInUseError } from './db/client.js';
import { DEMO_DATA_DIR } from './dev/demo-data.js';
import { startItunesServer } from './dev/itunes-server.js';
import { simulateDevice, simulationDeps, type SimulatedEnrollment } from './modules/devices/simulate.js';
import { ADMIN_GRADE, md5Hex, openConfiguredDatabase } from './platform/bootstrap.js';
import { ConfigError } from './platform/config.js';
import { ControlRefusal, requestSimulateDevice } from './platform/control-socket.js';
import { AppError, fail } from './platform/errors.js';
import { OWNER_ONLY_UMASK } from './platform/data-dir.js';
import { logProcessWarnings } from './platform/logger.js';
import { createAccountServices, createCoreServices, createPeopleServices } from './services.js';

/**
 * Operator commands. They read the same environment as the server (DATA_DIR or DATABASE_URL).
 * What they share (the log, the configuration, the services) is cli/context.ts; `worker` and
 * `backup`/`restore` are in cli/.
 */

// What a command and its children create is the operator's alone (docs/security.md, Data at rest).
process.umask(OWNER_ONLY_UMASK);
logProcessWarnings(() => cli.log);

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
          const people = await createPeopleServices(deps, accounts, core);
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

addWorkerCommand(program);
addBackupCommands(program);

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

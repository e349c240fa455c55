import { readFileSync, statSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { COUNTRIES, createAgentRequest, userId } from '@sideport/contracts';
import { createCoreServices } from './core-services.js';
import { startItunesServer } from './dev/itunes-server.js';
import { createAuthService } from './modules/auth/service.js';
import { createBillingService } from './modules/billing/service.js';
import { createBillingProvider } from './modules/billing/setup.js';
import { createEnrollmentService, enrollmentSettings } from './modules/devices/enrollment-service.js';
import { createRegistrationService } from './modules/devices/registration.js';
import { createDeviceService } from './modules/devices/service.js';
import { simulateDevice } from './modules/devices/simulate.js';
import { ADMIN_GRADE, md5Hex, openConfiguredDatabase } from './platform/bootstrap.js';
import { ConfigError, loadConfig } from './platform/config.js';

/** Operator commands. They read the same environment as the server (DATA_DIR or DATABASE_URL). */
async function withAuth<T>(fn: (auth: ReturnType<typeof createAuthService>) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = await openConfiguredDatabase(config);
  try {
    await database.migrate();
    const auth = createAuthService({
      db: database.db,
      clock: () => new Date(),
      limits: { sessionTtlDays: 1, signInPerId: 1, signInPerAddress: 1, signInWindowMinutes: 1 },
    });
    return await fn(auth);
  } finally {
    await database.close();
  }
}

/** The services an operator command acts through: the same the admin API uses. */
async function withServices<T>(fn: (services: Awaited<ReturnType<typeof createCoreServices>>) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const database = await openConfiguredDatabase(config);
  try {
    await database.migrate();
    const log = { info: () => {}, warn: (_obj: object, msg: string) => console.error(`warning: ${msg}`) };
    const services = await createCoreServices({ config, database, clock: () => new Date(), log });
    try {
      return await fn(services);
    } finally {
      await services.bus.close();
    }
  } finally {
    await database.close();
  }
}

/** Who the audit log names for what an operator did from the command line. */
const CLI_ACTOR = 'operator (cli)';

const storeId = (value: string) => {
  if (!/^[1-9]\d{0,15}$/.test(value) || !Number.isSafeInteger(Number(value))) throw new InvalidArgumentError('must be a positive whole number');
  return Number(value);
};

const country = (value: string) => {
  const upper = value.toUpperCase();
  if (!(COUNTRIES as readonly string[]).includes(upper)) throw new InvalidArgumentError(`must be one of ${COUNTRIES.join(', ')}`);
  return upper;
};

const integer = (value: string) => {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number');
  return Number(value);
};

const program = new Command('sideport').description('Sideport operator commands');

program
  .command('migrate')
  .description('apply database migrations (the server also applies them at start)')
  .action(async () => {
    const config = loadConfig();
    const database = await openConfiguredDatabase(config);
    await database.migrate();
    await database.close();
    console.log(`Migrations applied to ${database.description}.`);
  });

program
  .command('user:grade')
  .description('set a user grade (above 0 is admin, 0 a normal user)')
  .argument('<id>', 'user id')
  .argument('<grade>', 'grade', integer)
  .action(async (id: string, grade: number) => {
    const found = await withAuth((auth) => auth.setGrade(id, grade));
    if (!found) {
      console.error(`No user with id ${id}.`);
      process.exitCode = 1;
      return;
    }
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
    if (!password || password.length < 8) {
      console.error(`Set ${options.passwordEnv} to a password of at least 8 characters.`);
      process.exitCode = 1;
      return;
    }
    await withAuth((auth) => auth.ensureUser(id, md5Hex(password), options.grade));
    console.log(`User ${id} is ready with grade ${options.grade}${options.grade >= ADMIN_GRADE ? ' (admin)' : ''}.`);
  });

program
  .command('agent:create')
  .description('make a decrypt agent and print its token (shown only this once)')
  .argument('<name>', 'a name to know it by (the machine, say)')
  .action(async (name: string) => {
    const checked = createAgentRequest.safeParse({ name });
    if (!checked.success) throw new InvalidArgumentError(checked.error.issues[0]?.message ?? 'bad name');
    const made = await withServices(async ({ agents, catalog }) => {
      const agent = await agents.create(checked.data.name);
      await catalog.audit(CLI_ACTOR, 'create-agent', { id: agent.id, name: agent.name });
      return agent;
    });
    console.log(`Agent ${made.id} (${made.name}) is made. Its token, shown only this once:\n\n  ${made.token}\n`);
    console.log(`On the agent's machine: SIDEPORT_AGENT_TOKEN=<token> npx sideport-agent --server <this server's URL> --command '<your command>'`);
  });

program
  .command('agent:list')
  .description('list the decrypt agents: last seen, current job, done and failed counts')
  .action(async () => {
    const list = await withServices(({ agents }) => agents.list());
    if (list.length === 0) return console.log('No agents. Make one with: npx sideport agent:create <name>');
    const rows = [
      ['id', 'name', 'last seen', 'current job', 'done', 'failed'],
      ...list.map((a) => [a.id, a.name, a.last_seen_at ?? 'never', a.current_job ?? '-', String(a.done_count), String(a.failed_count)]),
    ];
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
    for (const row of rows) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd());
  });

program
  .command('agent:revoke')
  .description("revoke a decrypt agent's token; its jobs go back to the queue at once")
  .argument('<id>', 'agent id (see agent:list)', storeId)
  .action(async (id: number) => {
    const revoked = await withServices(async ({ agents, catalog }) => {
      const agent = await agents.revoke(id);
      await catalog.audit(CLI_ACTOR, 'revoke-agent', { id: String(agent.id), name: agent.name });
      return agent;
    });
    console.log(`Agent ${revoked.id} (${revoked.name}) is revoked: its token no longer works.`);
  });

program
  .command('ipa:import')
  .description("store the operator's own decrypted IPA as a Done version, through the same check as an agent's upload")
  .argument('<file>', 'the decrypted .ipa')
  .requiredOption('--country <cc>', `store country (${COUNTRIES.join(', ')})`, country)
  .option('--app-id <n>', "the store's app id (default: the app of the IPA's bundle id)", storeId)
  .option('--app-ver-id <n>', "the store's version id (default: iTunesMetadata.plist's softwareVersionExternalIdentifier)", storeId)
  .action(async (file: string, options: { country: string; appId?: number; appVerId?: number }) => {
    if (!statSync(file, { throwIfNoEntry: false })?.isFile()) throw new InvalidArgumentError(`There is no file at ${file}.`);
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
  .description('enroll a simulated iPhone for a user through the real enrollment path and print its UDID (dev identity only)')
  .argument('<user-id>', 'the account that gets the device')
  .option('--paid', 'pay for it on the test-mode checkout, so it is registered at once (test-mode billing only)')
  .action(async (userId: string, options: { paid?: boolean }) => {
    const config = loadConfig();
    const database = await openConfiguredDatabase(config);
    try {
      await database.migrate();
      const clock = () => new Date();
      const log = { info: () => {}, warn: (_obj: object, msg: string) => console.error(`warning: ${msg}`) };
      const core = await createCoreServices({ config, database, clock, log });
      try {
        const { db } = database;
        const { bus } = core;
        const auth = createAuthService({
          db,
          clock,
          limits: { sessionTtlDays: 1, signInPerId: 1, signInPerAddress: 1, signInWindowMinutes: 1 },
        });
        const devices = createDeviceService({ db, bus });
        const provider = createBillingProvider(config, { db, clock, log });
        const billing = createBillingService({ db, clock, provider, devices, users: auth, freeDailyLimit: config.FREE_DAILY_LIMIT, log });
        const enrollment = createEnrollmentService({ db, clock, bus, ...enrollmentSettings(config) });
        const registration = createRegistrationService({ db, clock, bus, registrar: core.signingIdentity, log });
        const made = await simulateDevice(
          {
            identityKind: core.signingIdentity.kind,
            billingProvider: provider.name,
            users: auth,
            enrollment,
            devices,
            billing,
            registration,
            baseUrl: config.PUBLIC_URL ? new URL(config.PUBLIC_URL).origin : `http://localhost:${config.PORT}`,
          },
          userId,
          { paid: options.paid === true },
        );
        console.log(`${made.deviceName} (${made.product}) enrolled for ${userId}: ${made.status}.`);
        console.log(made.status === 'Registered' ? 'Sign a Done version for it from its version list.' : 'Register it on My page (Device tab), or run this again with --paid.');
        console.log(made.udid);
      } finally {
        await core.bus.close();
      }
    } finally {
      await database.close();
    }
  });

program
  .command('worker')
  .description('run sign workers against this database and storage until stopped (SIGINT or SIGTERM)')
  .option('--workers <n>', 'signs at once in this process (default: SIGN_WORKERS, at least 1)', integer)
  .action(async (options: { workers?: number }) => {
    const config = loadConfig();
    const count = options.workers ?? Math.max(1, config.SIGN_WORKERS);
    if (count < 1 || count > 64) throw new InvalidArgumentError('--workers must be from 1 to 64');
    const database = await openConfiguredDatabase(config);
    await database.migrate();
    // One line per event on stdout, for a terminal or a service's journal.
    const line = (obj: object, msg: string) => console.log(`${new Date().toISOString()} ${msg}`);
    const log = { info: line, warn: (obj: object, msg: string) => console.error(`${new Date().toISOString()} warning: ${msg}`) };
    const services = await createCoreServices({ config, database, clock: () => new Date(), log });
    services.signWorkers.start(count);
    const sweeper = setInterval(() => {
      services.signWorkers.sweep().catch((err: unknown) => log.warn({ err }, 'sign lease sweep failed'));
    }, 5000);
    console.log(`Sign worker started: ${count} at once, ${database.description}, storage ${services.files.description}.`);
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    console.log('Stopping: signs under way go back to the queue.');
    clearInterval(sweeper);
    await services.signWorkers.stop();
    await services.bus.close();
    await database.close();
  });

program
  .command('itunes:serve')
  .description('serve recorded iTunes Search/Lookup answers locally (offline demos; set ITUNES_BASE_URL to its URL)')
  .argument('<answers...>', 'iTunes answer files ({"resultCount", "results"}); their results are searched by term')
  .option('--port <n>', 'port', integer, 8089)
  .action(async (files: string[], options: { port: number }) => {
    const records = files.flatMap((file) => {
      const body = JSON.parse(readFileSync(file, 'utf8')) as { results?: Array<Record<string, unknown>> };
      return body.results ?? [];
    });
    const server = await startItunesServer({ records, port: options.port });
    console.log(`iTunes wire-format server with ${records.length} records on ${server.url} (Ctrl-C stops it)`);
  });

try {
  await program.parseAsync();
} catch (err) {
  console.error(err instanceof ConfigError || err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
}

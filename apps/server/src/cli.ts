import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { startItunesServer } from './dev/itunes-server.js';
import { createAuthService } from './modules/auth/service.js';
import { ADMIN_GRADE, md5Hex, openConfiguredDatabase } from './platform/bootstrap.js';
import { ConfigError, loadConfig } from './platform/config.js';
import { userId } from '@sideport/contracts';

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

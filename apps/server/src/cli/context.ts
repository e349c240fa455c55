import { InvalidArgumentError } from 'commander';
import { COUNTRIES } from '@sideport/contracts';
import { openConfiguredDatabase } from '../platform/bootstrap.js';
import { loadConfig, type Config } from '../platform/config.js';
import { secureDataDir } from '../platform/data-dir.js';
import { createProcessLogger } from '../platform/logger.js';
import {
  createAccountServices,
  createCoreServices,
  type AccountServices,
  type CoreServices,
  type ServiceDeps,
} from '../services.js';

/**
 * What the operator commands share (cli.ts, cli/*.ts): their log, their configuration and the
 * services they act through, made as the API makes them, and the parsers of their arguments.
 *
 * Every log line is JSON (pino), on stderr: stdout carries what a command answers (a token, a
 * table). `worker` runs as a service and sets a log to stdout, as the server's.
 */
export const cli = { log: createProcessLogger({ LOG_LEVEL: 'info' }, 2) };

/**
 * The configuration, and the log level it names (until it is read, the level is info). With
 * `secure`, what Sideport keeps in DATA_DIR is made the user's alone; a command that checks the
 * folder first (backup, restore) passes false and secures it once the check passed, if at all.
 */
export function commandConfig({ secure = true }: { secure?: boolean } = {}): Config {
  const config = loadConfig();
  cli.log.level = config.LOG_LEVEL;
  if (secure) secureDataDir(config.DATA_DIR, cli.log, { create: false });
  return config;
}

/** The configuration and a migrated database, as the composition root (services.ts) takes them, for `fn`. */
export async function withDatabase<T>(fn: (deps: ServiceDeps) => Promise<T>): Promise<T> {
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
export function withAuth<T>(fn: (auth: AccountServices['auth']) => Promise<T>): Promise<T> {
  return withDatabase((deps) => fn(createAccountServices(deps).auth));
}

/** The services an operator command acts through: the same the admin API uses. */
export function withServices<T>(fn: (services: CoreServices) => Promise<T>): Promise<T> {
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
export const CLI_ACTOR = 'operator (cli)';

export const storeId = (value: string) => {
  if (!/^[1-9]\d{0,15}$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new InvalidArgumentError('must be a positive whole number');
  return Number(value);
};

export const country = (value: string) => {
  const upper = value.toUpperCase();
  if (!(COUNTRIES as readonly string[]).includes(upper))
    throw new InvalidArgumentError(`must be one of ${COUNTRIES.join(', ')}`);
  return upper;
};

export const integer = (value: string) => {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('must be a whole number');
  return Number(value);
};

import { createHash } from 'node:crypto';
import path from 'node:path';
import { openDatabase, type DatabaseHandle } from '../db/client.js';
import type { Config } from './config.js';

/** The database the configuration names: PostgreSQL for DATABASE_URL, else PGlite in DATA_DIR/db. */
export function openConfiguredDatabase(config: Config): Promise<DatabaseHandle> {
  return config.DATABASE_URL
    ? openDatabase({ url: config.DATABASE_URL })
    : openDatabase({ pgliteDir: path.join(config.DATA_DIR, 'db') });
}

/** What the web client would send for this password. */
export const md5Hex = (password: string) => createHash('md5').update(password).digest('hex');

export const ADMIN_GRADE = 1;

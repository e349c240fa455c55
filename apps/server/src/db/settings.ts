import { eq } from 'drizzle-orm';
import type { Database } from './client.js';
import { settings } from './schema/index.js';

/**
 * The settings table's rows, a value per key: what the operator chose in the console and what the
 * identities keep (sealed by their callers). The modules name their own keys.
 */
export async function readSetting(db: Database, key: string): Promise<string | undefined> {
  const [row] = await db.select({ value: settings.value }).from(settings).where(eq(settings.key, key));
  return row?.value;
}

/** Keeps `value` under `key`, replacing what was there. */
export async function writeSetting(db: Database, key: string, value: string): Promise<void> {
  await db
    .insert(settings)
    .values({ key, value })
    .onConflictDoUpdate({ target: settings.key, set: { value } });
}

export async function deleteSetting(db: Database, key: string): Promise<void> {
  await db.delete(settings).where(eq(settings.key, key));
}

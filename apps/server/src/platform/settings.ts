import { eq } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { settings } from '../db/schema/index.js';

/**
 * The value of `key`, made by `make` and stored on first use. Every process gets the same value:
 * when two make one at once, the first insert wins and both read it back.
 */
export async function settingOrCreate(
  db: Database,
  key: string,
  make: () => string | Promise<string>,
): Promise<string> {
  const read = async () => (await db.select().from(settings).where(eq(settings.key, key)))[0]?.value;
  const existing = await read();
  if (existing !== undefined) return existing;
  await db
    .insert(settings)
    .values({ key, value: await make() })
    .onConflictDoNothing();
  return (await read())!;
}

/**
 * The migration that keeps UDIDs in one letter case (drizzle/0009_udid_case.sql and 0010), run on a
 * database as an older Sideport left it: one device enrolled twice in two cases, each row paid for.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostgresDatabase, databaseKinds } from '../test/harness.js';

const migrationsFolder = path.resolve(import.meta.dirname, '../../drizzle');
/** The last migration of the Sideport that kept UDIDs as the device sent them. */
const BEFORE = '0006_sign';

/** A copy of the migrations folder that ends at `lastTag`. */
function migrationsUpTo(lastTag: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-migrations-'));
  const journal = JSON.parse(readFileSync(path.join(migrationsFolder, 'meta/_journal.json'), 'utf8')) as {
    entries: Array<{ tag: string }>;
  };
  const entries = journal.entries.slice(0, journal.entries.findIndex((e) => e.tag === lastTag) + 1);
  mkdirSync(path.join(dir, 'meta'));
  writeFileSync(path.join(dir, 'meta/_journal.json'), JSON.stringify({ ...journal, entries }));
  for (const { tag } of entries)
    cpSync(path.join(migrationsFolder, `${tag}.sql`), path.join(dir, `${tag}.sql`));
  return dir;
}

interface Migratable {
  migrate(folder: string): Promise<void>;
  rows<T>(query: SQL): Promise<T[]>;
  close(): Promise<void>;
}

async function openBare(kind: 'pglite' | 'postgres'): Promise<Migratable> {
  if (kind === 'pglite') {
    const client = await PGlite.create();
    const db = drizzlePglite(client);
    return {
      migrate: (folder) => migratePglite(db, { migrationsFolder: folder }),
      rows: async <T>(query: SQL) => ((await db.execute(query)) as unknown as { rows: T[] }).rows,
      close: () => client.close(),
    };
  }
  const created = await createPostgresDatabase();
  const pool = new pg.Pool({ connectionString: created.url, max: 2 });
  const db = drizzlePg(pool);
  return {
    migrate: (folder) => migratePg(db, { migrationsFolder: folder }),
    rows: async <T>(query: SQL) => ((await db.execute(query)) as unknown as { rows: T[] }).rows,
    async close() {
      await pool.end();
      await created.drop();
    },
  };
}

describe.each(databaseKinds)('keeping UDIDs in one letter case, on %s', (kind) => {
  let before: string;
  let db: Migratable;
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    before = migrationsUpTo(BEFORE);
    db = await openBare(kind);
    await db.migrate(before);
    await db.rows(sql`insert into users (id, password_hash) values ('ana', 'x'), ('ben', 'x')`);
    const device = async (
      name: string,
      userId: string,
      udid: string,
      status: string,
      paidYears: number,
      expiresAt: string | null,
    ) => {
      const [row] = await db.rows<{ id: string | number }>(sql`
        insert into devices (user_id, product, udid, status, paid_years, expires_at, device_name)
        values (${userId}, 'iPhone15,2', ${udid}, ${status}, ${paidYears}, ${expiresAt}::timestamptz, ${name})
        returning id`);
      ids[name] = Number(row!.id);
    };
    // Ana enrolled one iPhone twice: first in lower case (paid, registered), then in upper case (paid again).
    await device('lower', 'ana', '00008110-000a1b2c3d4e5f60', 'Registered', 0, '2027-01-10T00:00:00Z');
    await device('upper', 'ana', '00008110-000A1B2C3D4E5F60', 'Pending', 1, null);
    // Another device of hers, in lower case only; and Ben's own copy of her UDID (another account's device).
    await device('old', 'ana', 'a1b2c3d4e5f60718293a4b5c6d7e8f9012345678', 'Add', 0, null);
    await device('ben', 'ben', '00008110-000a1b2c3d4e5f60', 'Add', 0, null);
    await db.rows(sql`
      insert into payments (user_id, provider, event_id, item, paid_at)
      values ('ana', 'dev', 'evt-1', ${`device:${ids.lower}`}, now()), ('ana', 'dev', 'evt-2', ${`device:${ids.upper}`}, now())`);
    await db.rows(sql`
      insert into dev_checkouts (id, user_id, item, success_url, cancel_url, created_at, expires_at)
      values ('co-1', 'ana', ${JSON.stringify({ kind: 'device', index: 1, deviceId: ids.upper })}::jsonb, '/my', '/my', now(), now())`);
    await db.rows(sql`
      insert into user_profiles (user_id, profile, uuid, udids, created_at, expires_at)
      values ('ana', '', 'u', '["00008110-000a1b2c3d4e5f60"]'::jsonb, now(), now())`);
    await db.rows(sql`
      insert into sign_requests (user_id, source, app_id, app_ver_id, sign_type, status, title, requested_at, updated_at, udids)
      values ('ana', 'version', 1, 2, 0, 'Done', 'App', now(), now(), '["00008110-000a1b2c3d4e5f60", "00008110-000A1B2C3D4E5F60"]'::jsonb)`);

    await db.migrate(migrationsFolder);
  });
  afterAll(async () => {
    await db?.close();
    rmSync(before, { recursive: true, force: true });
  });

  it('merges the two rows of one device into the one furthest along, holding every paid year', async () => {
    const rows = await db.rows<{
      id: string | number;
      user_id: string;
      udid: string;
      status: string;
      paid_years: number;
      expires_at: Date | string | null;
    }>(sql`select id, user_id, udid, status, paid_years, expires_at from devices order by id`);
    expect(
      rows.map((r) => ({
        ...r,
        id: Number(r.id),
        expires_at: r.expires_at && new Date(r.expires_at).toISOString(),
      })),
    ).toEqual([
      // The Registered row stays; the year paid for the other waits for registration.
      {
        id: ids.lower,
        user_id: 'ana',
        udid: '00008110-000A1B2C3D4E5F60',
        status: 'Pending',
        paid_years: 1,
        expires_at: '2027-01-10T00:00:00.000Z',
      },
      {
        id: ids.old,
        user_id: 'ana',
        udid: 'A1B2C3D4E5F60718293A4B5C6D7E8F9012345678',
        status: 'Add',
        paid_years: 0,
        expires_at: null,
      },
      {
        id: ids.ben,
        user_id: 'ben',
        udid: '00008110-000A1B2C3D4E5F60',
        status: 'Add',
        paid_years: 0,
        expires_at: null,
      },
    ]);
  });

  it('moves the payments and open checkouts of the merged row to the one kept', async () => {
    const payments = await db.rows<{ item: string }>(sql`select item from payments order by event_id`);
    expect(payments.map((p) => p.item)).toEqual([`device:${ids.lower}`, `device:${ids.lower}`]);
    const [checkout] = await db.rows<{ item: unknown }>(
      sql`select item from dev_checkouts where id = 'co-1'`,
    );
    expect(checkout!.item).toEqual({ kind: 'device', index: 1, deviceId: ids.lower });
  });

  it('lists each UDID once, in upper case, in profiles and signed artifacts', async () => {
    const [profile] = await db.rows<{ udids: string[] }>(sql`select udids from user_profiles`);
    expect(profile!.udids).toEqual(['00008110-000A1B2C3D4E5F60']);
    const [signed] = await db.rows<{ udids: string[] }>(sql`select udids from sign_requests`);
    expect(signed!.udids).toEqual(['00008110-000A1B2C3D4E5F60']);
  });

  it('refuses a UDID written in lower case from now on', async () => {
    await expect(
      db.rows(
        sql`insert into devices (user_id, product, udid) values ('ben', 'iPhone15,2', 'abcdef01-0000000000000001')`,
      ),
    ).rejects.toThrow();
    expect(await db.rows(sql`select id from devices where user_id = 'ben'`)).toHaveLength(1);
  });
});

import path from 'node:path';
import { openDatabase } from '../../apps/server/src/db/client.js';
import * as catalog from '../../apps/server/src/modules/catalog/queries.js';
import type { StoreApp } from '../../apps/server/src/modules/catalog/itunes.js';

export const storeApp = (appId: number, changes: Partial<StoreApp> = {}): StoreApp => ({
  appId,
  name: `App ${appId}`,
  developer: `Developer ${appId}`,
  version: '2.1',
  iconUrl: 'https://is1-ssl.mzstatic.com/image/thumb/x/512x512bb.jpg',
  storeUrl: `https://apps.apple.com/kr/app/id${appId}`,
  rating: 4.5,
  ratingCount: 1200,
  bundleId: `com.example.app${appId}`,
  minimumOs: '14.0',
  sizeBytes: 52_428_800,
  price: 0,
  ...changes,
});

export interface SeedEntry {
  app: StoreApp;
  status: string;
  appVerId?: number | null;
  premium?: boolean;
}

/** Writes apps and decrypt entries into a data folder's embedded database, before the server opens it. */
export async function seedDataDir(dataDir: string, entries: SeedEntry[]) {
  const database = await openDatabase({ pgliteDir: path.join(dataDir, 'db') });
  try {
    await database.migrate();
    const now = new Date();
    for (const e of entries) {
      await catalog.upsertApps(database.db, 'KR', [e.app], now);
      await catalog.insertVersion(database.db, {
        country: 'KR',
        appId: e.app.appId,
        appVerId: e.appVerId === undefined ? e.app.appId + 1_000_000 : e.appVerId,
        version: e.app.version,
        status: e.status,
        premium: e.premium ?? false,
      });
    }
  } finally {
    await database.close();
  }
}

/** Adds a device (as enrollment would) for a user created here, before the server opens the folder. */
export async function seedUserDevice(
  dataDir: string,
  user: { id: string; passwordMd5: string },
  device: { product: string; udid: string; status?: 'Add' | 'Registered'; expiresAt?: Date },
) {
  const { createAuthService } = await import('../../apps/server/src/modules/auth/service.js');
  const { insertDevice } = await import('../../apps/server/src/modules/devices/queries.js');
  const database = await openDatabase({ pgliteDir: path.join(dataDir, 'db') });
  try {
    await database.migrate();
    const auth = createAuthService({
      db: database.db,
      clock: () => new Date(),
      limits: { sessionTtlDays: 1, signInPerId: 10, signInPerAddress: 10, signInWindowMinutes: 1 },
    });
    await auth.ensureUser(user.id, user.passwordMd5, 0);
    await insertDevice(database.db, {
      userId: user.id,
      product: device.product,
      udid: device.udid,
      status: device.status ?? 'Add',
      expiresAt: device.expiresAt ?? null,
    });
  } finally {
    await database.close();
  }
}

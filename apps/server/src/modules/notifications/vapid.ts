import webPush from 'web-push';
import type { Database } from '../../db/client.js';
import type { SecretBox } from '../../platform/secrets.js';
import { settingOrCreate } from '../../platform/settings.js';

/** The server's VAPID key pair (RFC 8292), base64url as browsers and `web-push` take them. */
export interface VapidKeys {
  publicKey: string;
  privateKey: string;
}

const SETTING = 'vapid_keys';
const PURPOSE = 'vapid-keys';

/**
 * The VAPID key pair, made at first start and kept with the other secrets: sealed with
 * SECRET_KEY in the settings table, so every process signs with the same key and a browser's
 * subscription (made with its public key) stays valid across restarts.
 */
export async function loadVapidKeys(db: Database, secrets: SecretBox): Promise<VapidKeys> {
  const sealed = await settingOrCreate(db, SETTING, () =>
    secrets.seal(JSON.stringify(webPush.generateVAPIDKeys()), PURPOSE),
  );
  const keys = JSON.parse(secrets.open(sealed, PURPOSE).toString('utf8')) as VapidKeys;
  return { publicKey: keys.publicKey, privateKey: keys.privateKey };
}

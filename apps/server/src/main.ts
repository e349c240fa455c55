import closeWithGrace from 'close-with-grace';
import type { AddressInfo } from 'node:net';
import { buildApp } from './app.js';
import { setupUrl } from './modules/auth/setup-link.js';
import { ConfigError, loadConfig, type Config } from './platform/config.js';
import { ADMIN_GRADE, md5Hex, openConfiguredDatabase } from './platform/bootstrap.js';

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
}

const config = readConfig();
const database = await openConfiguredDatabase(config);
await database.migrate();
const { app, services } = await buildApp({ config, database });

if (config.ADMIN_ID && config.ADMIN_PASSWORD) {
  await services.auth.ensureUser(config.ADMIN_ID, md5Hex(config.ADMIN_PASSWORD), ADMIN_GRADE);
  app.log.info({ admin: config.ADMIN_ID }, 'admin account ensured from ADMIN_ID');
}

const purge = setInterval(() => {
  services.auth.purgeExpiredSessions().catch((err: unknown) => app.log.warn({ err }, 'session purge failed'));
}, 3_600_000);
purge.unref();

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'shutting down after an error');
  else app.log.info({ signal }, 'shutting down');
  clearInterval(purge);
  await app.close();
  await database.close();
});

const address = await app.listen({ port: config.PORT, host: config.HOST });
app.log.info(
  { address, database: database.description, storage: `local disk ${config.DATA_DIR}/files` },
  `Sideport listening on ${address} (database: ${database.description}; storage: local disk ${config.DATA_DIR}/files)`,
);

// No admin yet (and none from ADMIN_ID): a one-time link to create one, printed this once.
const setupToken = await services.setup.issue();
if (setupToken) {
  const link = setupUrl(setupToken, {
    publicUrl: config.PUBLIC_URL,
    port: (app.server.address() as AddressInfo).port,
  });
  app.log.warn(
    `No admin account yet. Open ${link} to create it (the link works once; a restart prints a new one).`,
  );
}

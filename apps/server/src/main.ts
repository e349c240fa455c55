import closeWithGrace from 'close-with-grace';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildApp } from './app.js';
import { setupUrl } from './modules/auth/setup-link.js';
import { serveControlSocket } from './server-control.js';
import { loadConfig } from './platform/config.js';
import { ADMIN_GRADE, md5Hex, openConfiguredDatabase } from './platform/bootstrap.js';
import { OWNER_ONLY_UMASK, secureDataDir } from './platform/data-dir.js';
import { createProcessLogger, logProcessWarnings, WRITTEN_AS_IS } from './platform/logger.js';

// What this process and its children create is theirs alone (docs/security.md, Data at rest).
process.umask(OWNER_ONLY_UMASK);

// Until the app's logger exists, Node's warnings go to one like it (JSON on stdout).
let warningLog: { warn(obj: object, msg: string): void } = createProcessLogger({ LOG_LEVEL: 'info' }, 1);
logProcessWarnings(() => warningLog);

async function start() {
  const config = loadConfig();
  secureDataDir(config.DATA_DIR, createProcessLogger(config, 1), { create: true });
  const database = await openConfiguredDatabase(config);
  await database.migrate();
  const { app, services, readiness } = await buildApp({ config, database });
  warningLog = app.log;

  if (config.ADMIN_ID && config.ADMIN_PASSWORD) {
    await services.auth.ensureUser(config.ADMIN_ID, md5Hex(config.ADMIN_PASSWORD), ADMIN_GRADE);
    app.log.info({ admin: config.ADMIN_ID }, 'admin account ensured from ADMIN_ID');
  }

  // The embedded database is this process's alone: `sideport backup` and `device:simulate` ask it.
  const control = await serveControlSocket(config, database, { app, services });

  // Asked to stop (a rolling upgrade): leave readiness first, so the load balancer sends new
  // requests elsewhere, then finish what this process holds and exit (docs/architecture.md, Upgrades).
  closeWithGrace({ delay: config.SHUTDOWN_TIMEOUT_MS }, async ({ signal, err }) => {
    readiness.beginDrain();
    if (err) app.log.error({ err }, 'shutting down after an error');
    else {
      app.log.info(
        { signal, drainDelayMs: config.SHUTDOWN_DRAIN_DELAY_MS },
        'shutting down: /readyz answers 503',
      );
      await sleep(config.SHUTDOWN_DRAIN_DELAY_MS);
    }
    // Stops accepting connections, closes live streams with a reconnect hint, waits for the
    // requests under way, stops the sign workers (their signs go back to the queue) and the timers.
    await control?.close();
    await app.close();
    await database.close();
    app.log.info({ signal }, 'stopped');
  });

  const address = await app.listen({ port: config.PORT, host: config.HOST });
  const storage = services.files.description;
  app.log.info(
    { address, database: database.description, storage },
    `Sideport listening on ${address} (database: ${database.description}; storage: ${storage})`,
  );

  // No admin yet (and none from ADMIN_ID): a one-time link to create one, printed this once.
  const setupToken = await services.setup.issue();
  if (setupToken) {
    const link = setupUrl(setupToken, {
      publicUrl: config.PUBLIC_URL,
      port: (app.server.address() as AddressInfo).port,
    });
    app.log.warn(
      { [WRITTEN_AS_IS]: true },
      `No admin account yet. Open ${link} to create it (the link works once; a restart prints a new one).`,
    );
  }
}

try {
  await start();
} catch (err) {
  // Before the app's logger exists, or when it cannot start (a bad variable, the data folder in
  // use, PostgreSQL unreachable, the port taken): one JSON line on stderr that says why.
  createProcessLogger({ LOG_LEVEL: 'info' }, 2).fatal(
    { err },
    err instanceof Error ? err.message : String(err),
  );
  process.exit(1);
}

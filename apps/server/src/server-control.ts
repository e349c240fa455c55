import type { Built } from './app.js';
import { simulateDevice, simulationDeps } from './modules/devices/simulate.js';
import { writeBackup } from './platform/backup.js';
import type { Config } from './platform/config.js';
import { listenControlSocket } from './platform/control-socket.js';
import type { DatabaseHandle } from './db/client.js';

/**
 * The running server's control socket (platform/control-socket.ts), for the embedded database
 * only: `sideport backup` and `sideport device:simulate` ask this process, which holds the
 * database, to do their work. Undefined with PostgreSQL, where those commands open it themselves.
 */
export async function serveControlSocket(
  config: Config,
  database: DatabaseHandle,
  { app, services }: Pick<Built, 'app' | 'services'>,
): Promise<{ close(): Promise<void> } | undefined> {
  const dumpDataDir = database.dumpDataDir?.bind(database);
  if (!dumpDataDir) return undefined;
  return listenControlSocket({
    dataDir: config.DATA_DIR,
    backup: (out) =>
      writeBackup(
        { dataDir: config.DATA_DIR, dumpDatabase: dumpDataDir, holdDeletes: services.files.holdDeletes },
        out,
      ),
    simulateDevice: ({ userId, paid }) => simulateDevice(simulationDeps(services, config), userId, { paid }),
    log: app.log,
  });
}

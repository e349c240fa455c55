import { InvalidArgumentError, type Command } from 'commander';
import { periodicTasks, stopServices } from '../lifecycle.js';
import { serveMetrics } from '../modules/metrics/routes.js';
import { createSideportMetrics } from '../modules/metrics/service.js';
import { openConfiguredDatabase } from '../platform/bootstrap.js';
import { createProcessLogger } from '../platform/logger.js';
import { createScheduler } from '../platform/scheduler.js';
import { createCoreServices } from '../services.js';
import { cli, commandConfig, integer } from './context.js';

/**
 * `sideport worker`: sign workers of their own process against the same database and storage,
 * with the periodic work that applies to them, stopped in the order lifecycle.ts gives.
 */
export function addWorkerCommand(program: Command) {
  program
    .command('worker')
    .description('run sign workers against this database and storage until stopped (SIGINT or SIGTERM)')
    .option('--workers <n>', 'signs at once in this process (default: SIGN_WORKERS, at least 1)', integer)
    .action(async (options: { workers?: number }) => {
      // A service: its log goes to stdout, as the server's does.
      cli.log = createProcessLogger({ LOG_LEVEL: 'info' }, 1);
      const config = commandConfig();
      const log = cli.log;
      const count = options.workers ?? Math.max(1, config.SIGN_WORKERS);
      if (count < 1 || count > 64) throw new InvalidArgumentError('--workers must be from 1 to 64');
      const database = await openConfiguredDatabase(config);
      await database.migrate();
      const clock = () => new Date();
      const metrics = createSideportMetrics({
        db: database.db,
        clock,
        decryptLeaseSeconds: config.DECRYPT_LEASE_SECONDS,
        log,
      });
      const services = await createCoreServices({ config, database, clock, log }, metrics.service);
      const served =
        config.METRICS_PORT === undefined
          ? undefined
          : await serveMetrics({
              host: config.HOST,
              port: config.METRICS_PORT,
              token: config.METRICS_TOKEN,
              metrics,
              log,
            });
      services.signWorkers.start(count);
      // The API's periodic work that applies here: the sign lease sweep and the file sweep.
      const scheduler = createScheduler(periodicTasks(config, { role: 'worker', services }), log);
      scheduler.start();
      log.info(
        {
          workers: count,
          database: database.description,
          storage: services.files.description,
          metrics: served?.url ?? null,
        },
        `Sign worker started: ${count} at once, ${database.description}, storage ${services.files.description}` +
          (served ? `, metrics on ${served.url}.` : '.'),
      );
      const signal = await new Promise<string>((resolve) => {
        process.once('SIGINT', () => resolve('SIGINT'));
        process.once('SIGTERM', () => resolve('SIGTERM'));
      });
      log.info({ signal }, 'Stopping: signs under way go back to the queue.');
      await stopServices(services, scheduler, served);
      await database.close();
    });
}

/** The `sideport-agent` command; bin/sideport-agent.js imports the built copy of this file. */
import { main } from './main.js';

const stop = new AbortController();
let signals = 0;
for (const name of ['SIGINT', 'SIGTERM'] as const) {
  process.on(name, () => {
    signals += 1;
    // A second signal means now: the job at hand is left to its lease.
    if (signals > 1) process.exit(130);
    process.stdout.write(
      `${new Date().toISOString()} ${name}: stopping; the job at hand is handed back (again to quit at once)\n`,
    );
    stop.abort();
  });
}

process.exitCode = await main(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  stop: stop.signal,
});

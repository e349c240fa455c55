/** The `sideport-ipa` command; bin/sideport-ipa.js imports the built copy of this file. */
import { runCli } from './cli/run.js';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  now: () => new Date(),
});

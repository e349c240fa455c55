import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createAgentApi } from './api.js';
import { runAgent } from './agent.js';
import { createLogger, type LogOutput } from './log.js';
import { AGENT_VERSION } from './version.js';

export const USAGE = `Usage: SIDEPORT_AGENT_TOKEN=<token> sideport-agent --server <url> --command '<shell command>'
         [--versions-command '<shell command>'] [--work-dir DIR]

Claims decrypt jobs from a Sideport server and runs the operator's command for each.

  --server URL                 the Sideport server (https://sideport.example)
  --command CMD                makes the decrypted IPA of a job; it sees SIDEPORT_JOB_ID, SIDEPORT_COUNTRY,
                               SIDEPORT_APP_ID, SIDEPORT_BUNDLE_ID, SIDEPORT_APP_VER_ID, SIDEPORT_VERSION and
                               SIDEPORT_OUTPUT (where it writes the IPA); prints 'status Downloading|Downloaded|Process',
                               'progress N', 'app_ver_id N', 'version X'; exits 0 (done), 3 (unsupported) or other (failed)
  --versions-command CMD       prints an app's store versions, one JSON object per line, newest first:
                               {"app_ver_id": <number>, "version": "<string>"}; without it no versions jobs are taken
  --work-dir DIR               where jobs work (default: ${path.join(os.tmpdir(), 'sideport-agent')})
  -h, --help                   this text
  --version                    the agent's version

SIDEPORT_AGENT_TOKEN is the token an admin made (Admin console, or npx sideport agent:create <name>).
Exit codes: 0 stopped (SIGINT/SIGTERM), 1 the server refused the token, 2 wrong usage.`;

export const EXIT_USAGE = 2;

export interface MainIo {
  stdout: LogOutput;
  stderr: LogOutput;
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted by the first SIGINT/SIGTERM. */
  stop: AbortSignal;
}

function usageError(io: MainIo, message: string) {
  io.stderr.write(`sideport-agent: ${message}\n\n${USAGE}\n`);
  return EXIT_USAGE;
}

/** The `sideport-agent` command line (docs/agent-protocol.md); resolves with the exit code. */
export async function main(argv: string[], io: MainIo): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        server: { type: 'string' },
        command: { type: 'string' },
        'versions-command': { type: 'string' },
        'work-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    return usageError(io, (err as Error).message);
  }
  if (values.help) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (values.version) {
    io.stdout.write(`${AGENT_VERSION}\n`);
    return 0;
  }
  if (!values.server) return usageError(io, 'give the server with --server <url>.');
  if (!values.command?.trim())
    return usageError(io, "give the operator's command with --command '<shell command>'.");
  let server: URL;
  try {
    server = new URL(values.server);
    if (server.protocol !== 'http:' && server.protocol !== 'https:') throw new Error('not http');
  } catch {
    return usageError(
      io,
      `--server must be an http:// or https:// URL, not ${JSON.stringify(values.server)}.`,
    );
  }
  const token = io.env.SIDEPORT_AGENT_TOKEN?.trim();
  if (!token) {
    return usageError(
      io,
      "set SIDEPORT_AGENT_TOKEN to this agent's token (made by an admin: Admin console, or npx sideport agent:create <name>).",
    );
  }
  const workDir = path.resolve(values['work-dir'] ?? path.join(os.tmpdir(), 'sideport-agent'));
  const log = createLogger(io.stdout);
  log.info(
    `sideport-agent ${AGENT_VERSION}: server ${server.origin}${server.pathname === '/' ? '' : server.pathname}, work dir ${workDir}`,
  );
  return runAgent({
    api: createAgentApi({ server, token }),
    log,
    command: values.command,
    ...(values['versions-command']?.trim() ? { versionsCommand: values['versions-command'] } : {}),
    workDir,
    stop: io.stop,
  });
}

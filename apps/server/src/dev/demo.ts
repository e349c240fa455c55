/**
 * `npm run demo`: the product's loop on one machine with no device and no internet. A local iTunes
 * wire-format server answers from the repository's recorded store answers (fixtures/itunes), the
 * service runs embedded with its own DATA_DIR and an admin account, and a real `sideport-agent`
 * runs the demo command (demo-command.ts), which hands over the sample app relabelled and marked DEMO.
 * demo-loop.ts then takes it through a simulated iPhone, signing and the install manifest.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildApp } from '../app.js';
import { ADMIN_GRADE, md5Hex, openConfiguredDatabase } from '../platform/bootstrap.js';
import { loadConfig } from '../platform/config.js';
import { serveControlSocket } from '../server-control.js';
import { DEMO_DATA_DIR } from './demo-data.js';
import { startItunesServer } from './itunes-server.js';

const repositoryRoot = path.resolve(import.meta.dirname, '../../../..');
const agentBin = path.join(repositoryRoot, 'apps/agent/bin/sideport-agent.js');
// The built command, from src/dev and dist/dev alike (both two levels below apps/server).
const demoCommand = path.resolve(import.meta.dirname, '../../dist/dev/demo-command.js');
const DEMO_AGENT = 'demo agent';
export const DEMO_ADMIN_ID = 'demo-admin';
/** The demo admin's password, made at the first start and kept (0600) so every restart signs in with it. */
export const DEMO_PASSWORD_FILE = 'demo-admin-password';

/** The password kept in the demo's data folder, or a new one kept there. */
function demoAdminPassword(dataDir: string): string {
  const file = path.join(dataDir, DEMO_PASSWORD_FILE);
  if (existsSync(file)) {
    chmodSync(file, 0o600);
    const kept = readFileSync(file, 'utf8').trim();
    if (kept.length >= 8) return kept;
  }
  const made = randomBytes(9).toString('base64url');
  writeFileSync(file, `${made}\n`, { mode: 0o600 });
  return made;
}

export interface DemoOptions {
  port: number;
  host: string;
  /** A relative path is taken from the working directory (`npm run demo` runs in the repository root). */
  dataDir: string;
  /** Pause between the demo command's steps, so a person sees the status change. */
  stepMs: number;
  /** Where the demo's own lines and the agent's output go. */
  print: (line: string) => void;
}

export interface Demo {
  url: string;
  admin: { id: string; password: string };
  /** `agentSignalledMs`: how long to let an agent that got the terminal's Ctrl-C too leave by itself. */
  close(options?: { agentSignalledMs?: number }): Promise<void>;
}

export async function startDemo(options: DemoOptions): Promise<Demo> {
  const itunesDir = path.join(repositoryRoot, 'fixtures/itunes');
  const records = readdirSync(itunesDir)
    .filter((name) => name.endsWith('.json'))
    .flatMap(
      (name) =>
        (
          JSON.parse(readFileSync(path.join(itunesDir, name), 'utf8')) as {
            results?: Array<Record<string, unknown>>;
          }
        ).results ?? [],
    );
  const itunes = await startItunesServer({ records });

  // The operator's other settings apply (DECRYPT_ALLOW_PAID, say), but the demo is always the
  // embedded default on its own data, with the local store.
  const config = loadConfig({
    LOG_LEVEL: 'warn',
    ...process.env,
    DATABASE_URL: undefined,
    STORAGE_URL: undefined,
    PORT: String(options.port),
    HOST: options.host,
    DATA_DIR: options.dataDir,
    ITUNES_BASE_URL: itunes.url,
  });
  const database = await openConfiguredDatabase(config);
  await database.migrate();
  const { app, services } = await buildApp({ config, database });
  const admin = { id: DEMO_ADMIN_ID, password: demoAdminPassword(config.DATA_DIR) };
  await services.auth.ensureUser(admin.id, md5Hex(admin.password), ADMIN_GRADE);
  // `npx sideport --demo device:simulate` and `backup` ask this process, which holds the database.
  const control = await serveControlSocket(config, database, { app, services });
  await app.listen({ port: config.PORT, host: config.HOST });
  const { port } = app.server.address() as AddressInfo;
  const url = `http://${config.HOST === '0.0.0.0' ? 'localhost' : config.HOST}:${port}`;

  // One demo agent at a time: the previous run's token is revoked.
  for (const old of (await services.agents.list()).filter((a) => a.name === DEMO_AGENT))
    await services.agents.revoke(Number(old.id));
  const { token } = await services.agents.create(DEMO_AGENT);
  const command = `"${process.execPath}" "${demoCommand}"`;
  const agent: ChildProcess = spawn(
    process.execPath,
    [
      agentBin,
      '--server',
      `http://127.0.0.1:${port}`,
      '--command',
      command,
      '--versions-command',
      `${command} versions`,
      '--work-dir',
      path.join(config.DATA_DIR, 'agent'),
    ],
    {
      env: {
        ...process.env,
        SIDEPORT_AGENT_TOKEN: token,
        DEMO_ITUNES_URL: itunes.url,
        DEMO_STEP_MS: String(options.stepMs),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const relay = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n').filter(Boolean)) options.print(`[agent] ${line}`);
  };
  agent.stdout!.on('data', relay);
  agent.stderr!.on('data', relay);
  const agentExited = new Promise<void>((resolve) => agent.on('exit', () => resolve()));

  return {
    url,
    admin,
    async close({ agentSignalledMs = 0 } = {}) {
      // Ctrl-C on a terminal reaches the agent too, and it hands its job back before leaving;
      // a second signal would make it quit at once, so it is sent only if the agent stays.
      const left = await Promise.race([
        agentExited.then(() => true),
        sleep(agentSignalledMs).then(() => false),
      ]);
      if (!left) agent.kill('SIGTERM');
      await agentExited;
      await control?.close();
      await app.close();
      await database.close();
      await itunes.close();
    },
  };
}

/** The command that enrolls a simulated iPhone on this demo's data, from the repository root. */
export function simulateCommand(dataDir: string) {
  return path.resolve(dataDir) === DEMO_DATA_DIR
    ? 'npx sideport device:simulate <user-id> --paid --demo'
    : `DATA_DIR=${path.resolve(dataDir)} npx sideport device:simulate <user-id> --paid`;
}

/** What a newcomer reads once the demo runs. */
export function demoInstructions(demo: Demo, dataDir: string) {
  return [
    '',
    'Sideport demo: no device and no internet needed.',
    `  open      ${demo.url}`,
    `  sign in   ${demo.admin.id} / ${demo.admin.password}   (an admin; or sign up an account of your own)`,
    `            the same at every start: kept in ${path.join(dataDir, DEMO_PASSWORD_FILE)}`,
    '  search    facebook, talon or annuaire (veern is a paid app: refused unless DECRYPT_ALLOW_PAID=true)',
    "  then      Decrypt -> Decrypt Queue -> Done -> Download. The IPA is the repository's sample app relabelled",
    '            for the app you asked for and marked DEMO; nothing is downloaded from the store or decrypted.',
    '  premium   Mypage -> a plan -> the TEST MODE checkout: Downgrade then lists a made-up DEMO version history.',
    `  device    ${simulateCommand(dataDir)}`,
    '            enrolls a simulated iPhone for an account you signed up, beside the running demo',
    '            (the demo admin has one, made below).',
    `  data      ${dataDir} (delete it to start afresh). Ctrl-C stops everything.`,
    '',
  ].join('\n');
}

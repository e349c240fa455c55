import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const bundleScript = path.resolve(import.meta.dirname, '../../../agent/scripts/bundle.mjs');

/**
 * Builds the self-contained `sideport-agent` (apps/agent's esbuild bundle) into a folder outside
 * the repository, where no node_modules can be found: the agent the tests run is the one an
 * operator copies to another machine, built from the current sources.
 */
export function buildAgentBundle(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-agent-bundle-'));
  // Under the run's temporary folder, which the test setup removes (global-setup.ts).
  execFileSync(process.execPath, [bundleScript, dir], { stdio: 'pipe' });
  return path.join(dir, 'sideport-agent.mjs');
}

export interface AgentProcess {
  child: ChildProcess;
  /** Everything it printed so far. */
  output(): string;
  /** Resolves when its output matches, or rejects (with the output) after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Sends the signal and resolves with the exit code (null when a signal ended it). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface AgentProcessOptions {
  bundle: string;
  server: string;
  token: string;
  command: string;
  versionsCommand?: string;
  workDir?: string;
  /** Added to a minimal environment (PATH only, plus the token). */
  env?: Record<string, string>;
}

/** A real `sideport-agent` process, exactly as the operator starts it. */
export function startAgentProcess(options: AgentProcessOptions): AgentProcess {
  const args = [options.bundle, '--server', options.server, '--command', options.command];
  if (options.versionsCommand) args.push('--versions-command', options.versionsCommand);
  if (options.workDir) args.push('--work-dir', options.workDir);
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', SIDEPORT_AGENT_TOKEN: options.token, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const check of waiters) check();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    waitFor(pattern, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(out);
          if (!match) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(match);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the agent did not print ${pattern} within ${timeoutMs} ms; it printed:\n${out}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/**
 * Polls `probe` until it returns a value other than undefined, or throws after `timeoutMs` with
 * what `explain` says (the agents' output, say).
 */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 120_000,
  explain = () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${explain()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

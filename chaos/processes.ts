/**
 * The chaos run's processes: each started as an operator starts it, its output kept (a file per
 * process and the JSON lines in memory), and killed with SIGKILL or stopped with SIGTERM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export type ProcessKind = 'api' | 'worker' | 'agent';

export interface LogLine {
  time?: number;
  msg?: string;
  [field: string]: unknown;
}

export interface Managed {
  readonly name: string;
  readonly kind: ProcessKind;
  /** Starts (again) and resolves once the process says it is ready. */
  start(): Promise<void>;
  /** SIGKILL: no clean-up of any kind. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
  isRunning(): boolean;
  /** Every JSON line it wrote on stdout, over all its lives. */
  lines(): LogLine[];
  starts(): number;
}

export interface ProcessSpec {
  name: string;
  kind: ProcessKind;
  args: string[];
  env: Record<string, string>;
  /** A line that says the process is ready. */
  ready: RegExp;
  logFile: string;
}

const READY_TIMEOUT_MS = 120_000;

export function managedProcess(spec: ProcessSpec): Managed {
  const log: WriteStream = createWriteStream(spec.logFile, { flags: 'a' });
  const lines: LogLine[] = [];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let starts = 0;

  const waitForExit = async (graceMs: number) => {
    const done = await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)]);
    if (!done) {
      child?.kill('SIGKILL');
      await exited;
    }
  };

  return {
    name: spec.name,
    kind: spec.kind,
    lines: () => lines,
    starts: () => starts,
    isRunning: () => child !== undefined && child.exitCode === null && child.signalCode === null,

    start() {
      starts += 1;
      const started = spawn(process.execPath, spec.args, {
        env: spec.env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = started;
      exited = new Promise((resolve) => started.once('exit', () => resolve()));
      log.write(`---- start ${starts} (pid ${started.pid}) ${new Date().toISOString()}\n`);
      return new Promise<void>((resolve, reject) => {
        let pending = '';
        let ready = false;
        const timer = setTimeout(
          () => reject(new Error(`${spec.name} was not ready after ${READY_TIMEOUT_MS} ms`)),
          READY_TIMEOUT_MS,
        );
        const onText = (text: string, isStdout: boolean) => {
          log.write(text);
          if (!ready && spec.ready.test(text)) {
            ready = true;
            clearTimeout(timer);
            resolve();
          }
          if (!isStdout) return;
          pending += text;
          const parts = pending.split('\n');
          pending = parts.pop()!;
          for (const part of parts) {
            if (!part.startsWith('{')) continue;
            try {
              lines.push(JSON.parse(part) as LogLine);
            } catch {
              // A line cut by a kill.
            }
          }
        };
        started.stdout!.on('data', (chunk: Buffer) => onText(chunk.toString(), true));
        started.stderr!.on('data', (chunk: Buffer) => onText(chunk.toString(), false));
        started.once('exit', (code, signal) => {
          log.write(`---- exit ${code ?? signal} ${new Date().toISOString()}\n`);
          if (!ready) {
            clearTimeout(timer);
            reject(
              new Error(`${spec.name} exited (${code ?? signal}) before it was ready; see ${spec.logFile}`),
            );
          }
        });
      });
    },

    async kill() {
      child?.kill('SIGKILL');
      await exited;
    },

    async stop(graceMs = 20_000) {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      await waitForExit(graceMs);
    },
  };
}

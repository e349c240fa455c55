import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';

// The real entry point as `npm start` runs it (the test setup, global-setup.ts, brings dist up to date first).
export const mainJs = path.resolve(import.meta.dirname, '../../dist/main.js');
export const cliJs = path.resolve(import.meta.dirname, '../../bin/sideport.js');
export const md5 = (s: string) => createHash('md5').update(s).digest('hex');

export interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
}

/**
 * Starts `node dist/main.js` with only these variables (and PATH) and resolves once it listens.
 * `command` replaces the plain spawn, for tests that need the server under another parent.
 */
export function startServer(
  env: Record<string, string>,
  command?: { file: string; args: string[] },
): Promise<Running> {
  const child = spawn(command?.file ?? process.execPath, command?.args ?? [mainJs], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /Sideport listening on (http:\/\/[\d.:]+)/.exec(out);
      if (match) resolve({ child, url: match[1]!, output: () => out });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
    // Under another parent the server's end shows as its output closing.
    child.stdout.on('close', () => reject(new Error(`server ended:\n${out}`)));
  });
}

/** SIGTERM, then the exit code once it has shut down. */
export function stopServer(running: Running): Promise<number | null> {
  return new Promise((resolve) => {
    running.child.removeAllListeners('exit');
    running.child.on('exit', (code) => resolve(code));
    running.child.kill('SIGTERM');
  });
}

export function runCli(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn(process.execPath, [cliJs, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

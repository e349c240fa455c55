import { spawn } from 'node:child_process';
import path from 'node:path';

// The built CLI, as `npx sideport` runs it (the test setup, global-setup.ts, brings dist up to date first).
export const cliJs = path.resolve(import.meta.dirname, '../../bin/sideport.js');

/** A command's run: `out` is stdout and stderr together, `stdout` what it answered, `log` its stderr. */
export function runCli(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; out: string; stdout: string; log: string }>((resolve) => {
    const child = spawn(process.execPath, [cliJs, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
    });
    let out = '';
    let stdout = '';
    let log = '';
    child.stdout.on('data', (c: Buffer) => ((out += c.toString()), (stdout += c.toString())));
    child.stderr.on('data', (c: Buffer) => ((out += c.toString()), (log += c.toString())));
    child.on('exit', (code) => resolve({ code, out, stdout, log }));
  });
}

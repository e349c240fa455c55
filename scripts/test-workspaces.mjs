#!/usr/bin/env node
/**
 * Every workspace's tests, as `npm test` runs them after formatting, types and lint.
 *
 * The short suites run one after another. The two long ones run side by side: the toolkit's and
 * then the server's in one line, the browser tests in the other. Alone, the server suite keeps 1.5
 * of two cores busy and the browser suite one (much of a browser test is waiting for a page), so
 * one after the other they left the machine a third idle for some 25 minutes.
 *
 * The server line's output streams as it comes; the browser suite's is kept and printed whole once
 * it ends, so neither interleaves the other's lines. The exit status is the first failure's, after
 * both lines have ended. Ctrl-C stops both.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const shortSuites = ['@sideport/contracts', '@sideport/agent', '@sideport/web'];
const streamed = ['@sideport/ipa', '@sideport/server'];
const kept = '@sideport/e2e';

const children = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
    process.exit(130);
  });
}

/** `npm test` of one workspace; resolves with its exit status. */
function testWorkspace(name, output) {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', 'test', '-w', name], {
      cwd: root,
      stdio: ['ignore', output ?? 'inherit', output ?? 'inherit'],
    });
    children.add(child);
    child.on('error', (err) => {
      console.error(`${name}: ${err.message}`);
      resolve(1);
    });
    child.on('close', (code, signal) => {
      children.delete(child);
      resolve(code ?? (signal ? 1 : 0));
    });
  });
}

/** Workspaces one after another, stopping at the first that fails. */
async function inTurn(names, output) {
  for (const name of names) {
    const status = await testWorkspace(name, output);
    if (status !== 0) return status;
  }
  return 0;
}

const shortStatus = await inTurn(shortSuites);
if (shortStatus !== 0) process.exit(shortStatus);

// Both lines start the built server: bring the build up to date once, before either looks at it.
const built = await new Promise((resolve) => {
  const child = spawn('npx', ['tsc', '-b'], { cwd: root, stdio: 'inherit' });
  child.on('close', (code) => resolve(code ?? 1));
});
if (built !== 0) process.exit(built);

const keptDir = mkdtempSync(path.join(tmpdir(), 'sideport-test-log-'));
const keptLog = path.join(keptDir, 'e2e.log');
const keptFile = createWriteStream(keptLog);
await new Promise((resolve) => keptFile.once('open', resolve));
console.log(`${kept} runs beside the suites below; its output follows when it ends.\n`);
const [streamedStatus, keptStatus] = await Promise.all([inTurn(streamed), testWorkspace(kept, keptFile)]);
await new Promise((resolve) => keptFile.end(resolve));
process.stdout.write(`\n── ${kept} ──\n`);
process.stdout.write(readFileSync(keptLog));
rmSync(keptDir, { recursive: true, force: true });
process.exit(streamedStatus || keptStatus);

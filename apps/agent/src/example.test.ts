import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandEnvironment, failureOf, runCommand } from './command.js';
import { parseCommandLine } from './lines.js';

const examples = path.resolve(import.meta.dirname, '../../../examples/agent');
const work = mkdtempSync(path.join(tmpdir(), 'agent-example-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function runExample(script: string, variables: Record<string, string>) {
  const stdout: string[] = [];
  const result = await runCommand(`sh "${path.join(examples, script)}"`, {
    env: commandEnvironment(variables),
    cwd: work,
    signal: new AbortController().signal,
    onStdoutLine: (line) => stdout.push(line),
    onStderrLine: () => {},
  });
  return { stdout, failure: failureOf(result) };
}

/** examples/agent: the annotated operator commands run, speak the contract, and say where the tool goes. */
describe('the example operator commands', () => {
  it('report a status, then fail the attempt with a reason pointing at the placeholder', async () => {
    const { stdout, failure } = await runExample('decrypt-command.sh', {
      SIDEPORT_JOB_ID: '1-1',
      SIDEPORT_COUNTRY: 'kr',
      SIDEPORT_APP_ID: '284882215',
      SIDEPORT_BUNDLE_ID: 'com.facebook.Facebook',
      SIDEPORT_APP_VER_ID: '',
      SIDEPORT_VERSION: '',
      SIDEPORT_OUTPUT: path.join(work, 'out.ipa'),
    });
    expect(stdout.map(parseCommandLine)).toContainEqual({
      kind: 'report',
      report: { status: 'Downloading' },
    });
    expect(failure).toEqual({
      reason: 'examples/agent/decrypt-command.sh has no tool yet: fill in its YOUR TOOL HERE part.',
      unsupported: false,
    });
  });

  it('the versions example does the same with its three variables', async () => {
    const { failure } = await runExample('versions-command.sh', {
      SIDEPORT_COUNTRY: 'kr',
      SIDEPORT_APP_ID: '1',
      SIDEPORT_BUNDLE_ID: 'a.b',
    });
    expect(failure?.reason).toBe(
      'examples/agent/versions-command.sh has no tool yet: fill in its YOUR TOOL HERE part.',
    );
  });
});

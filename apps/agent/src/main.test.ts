import { describe, expect, it } from 'vitest';
import { main, type MainIo } from './main.js';

function io(env: Record<string, string> = {}) {
  let out = '';
  let err = '';
  const value: MainIo = {
    stdout: { write: (t: string) => (out += t) },
    stderr: { write: (t: string) => (err += t) },
    env,
    stop: AbortSignal.abort(),
  };
  return { value, out: () => out, err: () => err };
}

describe('the sideport-agent command line', () => {
  it('prints its usage with --help', async () => {
    const cli = io();
    expect(await main(['--help'], cli.value)).toBe(0);
    expect(cli.out()).toContain(
      "Usage: SIDEPORT_AGENT_TOKEN=<token> sideport-agent --server <url> --command '<shell command>'",
    );
  });

  it('refuses wrong usage with exit 2 and a sentence', async () => {
    const cases: Array<[string[], Record<string, string>, string]> = [
      [['--command', 'x'], { SIDEPORT_AGENT_TOKEN: 't' }, 'give the server with --server <url>.'],
      [
        ['--server', 'http://s'],
        { SIDEPORT_AGENT_TOKEN: 't' },
        "give the operator's command with --command '<shell command>'.",
      ],
      [
        ['--server', 'ftp://s', '--command', 'x'],
        { SIDEPORT_AGENT_TOKEN: 't' },
        '--server must be an http:// or https:// URL, not "ftp://s".',
      ],
      [['--server', 'http://s', '--command', 'x'], {}, 'set SIDEPORT_AGENT_TOKEN'],
      [
        ['--server', 'http://s', '--command', 'x', '--bogus'],
        { SIDEPORT_AGENT_TOKEN: 't' },
        "Unknown option '--bogus'",
      ],
    ];
    for (const [args, env, sentence] of cases) {
      const cli = io(env);
      expect(await main(args, cli.value), args.join(' ')).toBe(2);
      expect(cli.err()).toContain(sentence);
    }
  });

  it('never prints the token', async () => {
    const cli = io({ SIDEPORT_AGENT_TOKEN: 'spa_very_secret' });
    expect(
      await main(
        [
          '--server',
          'http://127.0.0.1:9',
          '--command',
          'true',
          '--work-dir',
          '/tmp/sideport-agent-main-test',
        ],
        cli.value,
      ),
    ).toBe(0);
    expect(cli.out()).toContain('stopped');
    expect(cli.out() + cli.err()).not.toContain('spa_very_secret');
  });
});

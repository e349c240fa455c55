import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface CommandOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Aborting ends the command: SIGTERM to its whole process group, SIGKILL after `killGraceMs`. */
  signal: AbortSignal;
  onStdoutLine: (line: string) => void;
  onStderrLine: (line: string) => void;
  killGraceMs?: number;
}

export interface CommandResult {
  /** The exit code, or null when a signal ended it. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The last non-empty line it wrote on stderr: the reason a failure is reported with. */
  lastStderrLine: string | undefined;
  /** It could not be started at all (the shell is missing, the folder is gone). */
  startError?: Error;
}

// After the command exits, output still buffered in its pipes is read for at most this long: a
// background process it left behind may hold them open for good.
const DRAIN_MS = 2000;

/**
 * Runs an operator's shell command in a process group of its own, so that ending it (lease lost,
 * agent stopping) ends everything it started, not just the shell. Lines are delivered as they come.
 */
export function runCommand(command: string, options: CommandOptions): Promise<CommandResult> {
  const { signal, killGraceMs = 5000 } = options;
  return new Promise((resolve) => {
    const isWindows = process.platform === 'win32';
    const child = spawn(command, {
      shell: true,
      // POSIX: the command leads a new process group, which kill(-pid) reaches as a whole.
      detached: !isWindows,
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let lastStderrLine: string | undefined;
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let startError: Error | undefined;
    let openStreams = 2;
    let killTimer: NodeJS.Timeout | undefined;
    let drainTimer: NodeJS.Timeout | undefined;

    const killGroup = (sig: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        if (isWindows) child.kill(sig);
        else process.kill(-child.pid, sig);
      } catch {
        // Already gone.
      }
    };
    const onAbort = () => {
      killGroup('SIGTERM');
      killTimer = setTimeout(() => killGroup('SIGKILL'), killGraceMs);
    };
    const finish = () => {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(killTimer);
      clearTimeout(drainTimer);
      child.stdout?.destroy();
      child.stderr?.destroy();
      resolve({
        code: exited?.code ?? null,
        signal: exited?.signal ?? null,
        lastStderrLine,
        ...(startError ? { startError } : {}),
      });
    };
    const streamEnded = () => {
      openStreams -= 1;
      if (openStreams === 0 && exited) finish();
    };

    createInterface({ input: child.stdout!, crlfDelay: Infinity }).on('line', (line) =>
      options.onStdoutLine(line),
    );
    createInterface({ input: child.stderr!, crlfDelay: Infinity }).on('line', (line) => {
      const trimmed = line.trim();
      if (trimmed) lastStderrLine = trimmed;
      options.onStderrLine(line);
    });
    child.stdout!.on('close', streamEnded);
    child.stderr!.on('close', streamEnded);
    child.on('error', (err) => {
      startError = err;
      exited ??= { code: null, signal: null };
      finish();
    });
    child.on('exit', (code, sig) => {
      exited = { code, signal: sig };
      if (openStreams === 0) finish();
      else drainTimer = setTimeout(finish, DRAIN_MS);
    });
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Exit code 3 of the operator's command: the app cannot be done (docs/agent-protocol.md). */
export const EXIT_UNSUPPORTED = 3;

/**
 * The failure a finished command reports, or undefined for exit 0: the last stderr line is the
 * reason (docs/agent-protocol.md), with a sentence of ours when it printed none.
 */
export function failureOf(result: CommandResult): { reason: string; unsupported: boolean } | undefined {
  if (result.startError)
    return { reason: `The command could not be started: ${result.startError.message}`, unsupported: false };
  if (result.code === 0) return undefined;
  const unsupported = result.code === EXIT_UNSUPPORTED;
  const fallback =
    result.code === null
      ? `The command was ended by ${result.signal ?? 'a signal'}.`
      : `The command exited with code ${result.code}${unsupported ? ' (unsupported)' : ''} and wrote nothing on stderr.`;
  return { reason: result.lastStderrLine ?? fallback, unsupported };
}

/**
 * The operator command's environment: the agent's own, without any SIDEPORT_ variable of its own
 * (the token above all), plus exactly the job's SIDEPORT_ variables.
 */
export function commandEnvironment(
  jobVariables: Record<string, string>,
  base: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(
    Object.entries(base).filter(([name]) => !name.toUpperCase().startsWith('SIDEPORT_')),
  );
  return { ...inherited, ...jobVariables };
}

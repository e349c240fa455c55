/** Where the agent writes: standard output, a terminal or not. */
export interface LogOutput {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  /**
   * A line redrawn in place on a terminal (the upload's progress bar); null clears it. Ordinary
   * lines printed meanwhile clear it first, and the next redraw brings it back.
   */
  transient(text: string | null): void;
  readonly isTTY: boolean;
}

/** One timestamped line per event. The agent's token never reaches a log line. */
export function createLogger(out: LogOutput, clock: () => Date = () => new Date()): Logger {
  const isTTY = out.isTTY === true;
  let showingTransient = false;
  const line = (level: string, message: string) => {
    if (showingTransient) {
      // \r returns to the line start, \x1b[K clears what the bar left there.
      out.write('\r\x1b[K');
      showingTransient = false;
    }
    out.write(`${clock().toISOString()} ${level}${message}\n`);
  };
  return {
    isTTY,
    info: (message) => line('', message),
    warn: (message) => line('warning: ', message),
    error: (message) => line('error: ', message),
    transient(text) {
      if (!isTTY) return;
      if (text === null) {
        if (showingTransient) out.write('\r\x1b[K');
        showingTransient = false;
        return;
      }
      out.write(`\r${text}\x1b[K`);
      showingTransient = true;
    },
  };
}

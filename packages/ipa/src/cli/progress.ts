import type { CheckProgress } from '../check.js';

export interface ProgressOutput {
  write(text: string): void;
  readonly isTTY: boolean;
}

const BAR_WIDTH = 24;

/** A redrawn bar on a terminal; one plain line per step otherwise (logs, CI, pipes). */
export function createProgressReporter(
  out: ProgressOutput,
  label: string,
): {
  report: (progress: CheckProgress) => void;
  finish: () => void;
} {
  let drewBar = false;
  return {
    report({ done, total, path }) {
      if (!out.isTTY) {
        out.write(`${label} ${done}/${total}: ${path}\n`);
        return;
      }
      const filled = total === 0 ? BAR_WIDTH : Math.round((done / total) * BAR_WIDTH);
      const bar = '#'.repeat(filled) + '-'.repeat(BAR_WIDTH - filled);
      const name = path.length > 40 ? `…${path.slice(-39)}` : path;
      // \r returns to the line start, \x1b[K clears what the previous, longer line left behind.
      out.write(`\r[${bar}] ${done}/${total} ${name}\x1b[K`);
      drewBar = true;
    },
    finish() {
      if (drewBar) out.write('\n');
    },
  };
}

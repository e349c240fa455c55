import type { Logger } from './log.js';

const BAR_WIDTH = 24;
const KB = 1024;
const MB = 1024 * KB;

/**
 * The upload's progress: a bar redrawn in place on a terminal, a plain line per tenth otherwise
 * (logs, services, pipes).
 */
export function createUploadProgress(log: Logger, label: string, clock: () => number = Date.now) {
  const startedAt = clock();
  let lastTenth = 0;
  let lastDrawAt = 0;
  return {
    update(sentBytes: number, totalBytes: number) {
      // In the unit of the whole file, so a small IPA never reads '0.0 of 0.0 MB'.
      const [unitBytes, unit] = totalBytes < MB ? [KB, 'kB'] : [MB, 'MB'];
      const size = (bytes: number) => (bytes / unitBytes).toFixed(1);
      const fraction = totalBytes === 0 ? 1 : sentBytes / totalBytes;
      if (!log.isTTY) {
        const tenth = Math.floor(fraction * 10);
        if (tenth > lastTenth) {
          lastTenth = tenth;
          log.info(`${label}: uploaded ${tenth * 10}% (${size(sentBytes)} of ${size(totalBytes)} ${unit})`);
        }
        return;
      }
      const now = clock();
      // Redrawing on every 64 KiB chunk would cost more than the upload; 10 times a second is plenty.
      if (now - lastDrawAt < 100 && sentBytes < totalBytes) return;
      lastDrawAt = now;
      const filled = Math.round(fraction * BAR_WIDTH);
      const seconds = Math.max((now - startedAt) / 1000, 0.001);
      log.transient(
        `${label} [${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}] ${Math.floor(fraction * 100)}% ` +
          `${size(sentBytes)}/${size(totalBytes)} ${unit} ${size(sentBytes / seconds)} ${unit}/s`,
      );
    },
    finish() {
      log.transient(null);
    },
  };
}

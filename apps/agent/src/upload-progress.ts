import type { Logger } from './log.js';

const BAR_WIDTH = 24;
const MB = 1024 * 1024;

/**
 * The upload's progress: a bar redrawn in place on a terminal, a plain line per tenth otherwise
 * (logs, services, pipes).
 */
export function createUploadProgress(log: Logger, label: string, clock: () => number = Date.now) {
  const startedAt = clock();
  let lastTenth = 0;
  let lastDrawAt = 0;
  const mb = (bytes: number) => (bytes / MB).toFixed(1);
  return {
    update(sentBytes: number, totalBytes: number) {
      const fraction = totalBytes === 0 ? 1 : sentBytes / totalBytes;
      if (!log.isTTY) {
        const tenth = Math.floor(fraction * 10);
        if (tenth > lastTenth) {
          lastTenth = tenth;
          log.info(`${label}: uploaded ${tenth * 10}% (${mb(sentBytes)} of ${mb(totalBytes)} MB)`);
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
          `${mb(sentBytes)}/${mb(totalBytes)} MB ${mb(sentBytes / seconds)} MB/s`,
      );
    },
    finish() {
      log.transient(null);
    },
  };
}

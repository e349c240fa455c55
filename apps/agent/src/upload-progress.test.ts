import { describe, expect, it } from 'vitest';
import { createLogger } from './log.js';
import { createUploadProgress } from './upload-progress.js';

const MB = 1024 * 1024;

function logTo(isTTY: boolean) {
  let text = '';
  return {
    log: createLogger({ isTTY, write: (t: string) => (text += t) }, () => new Date('2026-11-23T10:00:00Z')),
    text: () => text,
  };
}

describe('upload progress', () => {
  it('redraws one bar in place on a terminal, and clears it before the next log line', () => {
    const out = logTo(true);
    let now = 0;
    const progress = createUploadProgress(out.log, 'job 1-1', () => now);
    now = 1000;
    progress.update(5 * MB, 20 * MB);
    now = 2000;
    progress.update(20 * MB, 20 * MB);
    progress.finish();
    out.log.info('next');
    expect(out.text()).toBe(
      '\rjob 1-1 [######------------------] 25% 5.0/20.0 MB 5.0 MB/s\x1b[K' +
        '\rjob 1-1 [########################] 100% 20.0/20.0 MB 10.0 MB/s\x1b[K' +
        '\r\x1b[K2026-11-23T10:00:00.000Z next\n',
    );
  });

  it('writes a plain line per tenth elsewhere (logs, services, pipes)', () => {
    const out = logTo(false);
    const progress = createUploadProgress(out.log, 'job 1-1');
    for (let sent = 1; sent <= 40; sent++) progress.update(sent * MB, 40 * MB);
    const lines = out.text().trim().split('\n');
    expect(lines).toHaveLength(10);
    expect(lines[0]).toBe('2026-11-23T10:00:00.000Z job 1-1: uploaded 10% (4.0 of 40.0 MB)');
    expect(lines.at(-1)).toBe('2026-11-23T10:00:00.000Z job 1-1: uploaded 100% (40.0 of 40.0 MB)');
  });

  it('counts a file under 1 MB in kB, never as 0.0 of 0.0 MB', () => {
    const out = logTo(false);
    const progress = createUploadProgress(out.log, 'job 1-1');
    progress.update(20_440, 20_440);
    expect(out.text()).toBe('2026-11-23T10:00:00.000Z job 1-1: uploaded 100% (20.0 of 20.0 kB)\n');
  });
});

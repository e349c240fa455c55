import { describe, expect, it } from 'vitest';
import { streamCapFor } from '../modules/events/stream-limits.js';
import { parseProcLimits, readOpenFileLimit } from './open-files.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('the open-file limit', () => {
  it("reads the soft limit from /proc/self/limits' text", () => {
    expect(parseProcLimits(LIMITS)).toBe(1024);
    expect(parseProcLimits(LIMITS.replace('1024   ', 'unlimited'))).toBe(Infinity);
    expect(parseProcLimits('Max cpu time unlimited unlimited seconds\n')).toBeUndefined();
  });

  it("reads this process's limit, a positive number", () => {
    const { limit, source } = readOpenFileLimit();
    expect(limit).toBeGreaterThan(0);
    expect(['/proc/self/limits', 'ulimit -n', 'assumed']).toContain(source);
  });

  it('keeps the event stream cap at half the limit at most, EVENT_STREAMS_MAX below it', () => {
    expect(streamCapFor(1024, undefined)).toBe(512);
    expect(streamCapFor(1024, 5000)).toBe(512);
    expect(streamCapFor(1024, 100)).toBe(100);
    expect(streamCapFor(Infinity, 100)).toBe(100);
  });
});

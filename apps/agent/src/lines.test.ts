import { describe, expect, it } from 'vitest';
import { merge } from './lease.js';
import { parseCommandLine, parseVersionsLine } from './lines.js';

describe("the operator command's stdout lines", () => {
  it('reads the four report lines of the contract', () => {
    expect(parseCommandLine('status Downloading')).toEqual({
      kind: 'report',
      report: { status: 'Downloading' },
    });
    expect(parseCommandLine('progress 42')).toEqual({ kind: 'report', report: { progress: 42 } });
    expect(parseCommandLine('progress 99.6%')).toEqual({ kind: 'report', report: { progress: 100 } });
    expect(parseCommandLine('app_ver_id 853372310\r')).toEqual({
      kind: 'report',
      report: { app_ver_id: '853372310' },
    });
    expect(parseCommandLine('version 17.2.1')).toEqual({ kind: 'report', report: { version: '17.2.1' } });
  });

  it('logs other lines, and keywords with a wrong value are refused with the reason', () => {
    expect(parseCommandLine('Downloading 4 MB of 90')).toEqual({ kind: 'text' });
    expect(parseCommandLine('version control is hard')).toEqual({ kind: 'text' });
    expect(parseCommandLine('status Done')).toEqual({
      kind: 'invalid',
      problem: 'status must be Downloading, Downloaded or Process, not "Done"',
    });
    expect(parseCommandLine('progress 140')).toMatchObject({ kind: 'invalid' });
    expect(parseCommandLine('app_ver_id -3')).toMatchObject({ kind: 'invalid' });
  });

  it('reads a versions line as JSON, and leaves other text alone', () => {
    expect(parseVersionsLine('{"app_ver_id": 853372310, "version": "17.2"}')).toEqual({
      kind: 'version',
      version: { app_ver_id: '853372310', version: '17.2' },
    });
    expect(parseVersionsLine('fetching the history')).toEqual({ kind: 'text' });
    expect(parseVersionsLine('{"app_ver_id": 1')).toMatchObject({ kind: 'invalid' });
    expect(parseVersionsLine('{"id": 1, "version": "1.0"}')).toMatchObject({ kind: 'invalid' });
  });
});

describe('heartbeat reports waiting to be sent', () => {
  it('keeps every status in order and only the latest progress between them', () => {
    const queued = [
      { status: 'Downloading' as const },
      { progress: 10 },
      { progress: 40 },
      { status: 'Downloaded' as const },
      { app_ver_id: '7' },
    ];
    expect(queued.reduce((all, report) => merge(all, [report]), [] as ReturnType<typeof merge>)).toEqual([
      { status: 'Downloading', progress: 40 },
      { status: 'Downloaded', app_ver_id: '7' },
    ]);
  });
});

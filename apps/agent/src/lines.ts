import {
  agentWorkStatus,
  storeId,
  storeVersion,
  type HeartbeatRequest,
  type StoreVersion,
} from '@sideport/contracts';

export type StdoutLine =
  | { kind: 'report'; report: HeartbeatRequest }
  /** A line that starts with a keyword but whose value breaks the contract: logged and ignored. */
  | { kind: 'invalid'; problem: string }
  | { kind: 'text' };

/**
 * One stdout line of the operator's command (docs/agent-protocol.md): `status Downloading|Downloaded|Process`,
 * `progress N` (0-100), `app_ver_id N` or `version X` is reported to the server; anything else is
 * only logged.
 */
export function parseCommandLine(raw: string): StdoutLine {
  const line = raw.trim();
  const match = /^(status|progress|app_ver_id|version)\s+(.+)$/.exec(line);
  if (!match) return { kind: 'text' };
  const [, key, rawValue] = match as unknown as [string, string, string];
  const value = rawValue.trim();
  switch (key) {
    case 'status': {
      const status = agentWorkStatus.safeParse(value);
      return status.success
        ? { kind: 'report', report: { status: status.data } }
        : {
            kind: 'invalid',
            problem: `status must be Downloading, Downloaded or Process, not ${JSON.stringify(value)}`,
          };
    }
    case 'progress': {
      const number = /^\d{1,3}(\.\d+)?%?$/.test(value) ? Math.round(Number.parseFloat(value)) : Number.NaN;
      return number >= 0 && number <= 100
        ? { kind: 'report', report: { progress: number } }
        : {
            kind: 'invalid',
            problem: `progress must be a number from 0 to 100, not ${JSON.stringify(value)}`,
          };
    }
    case 'app_ver_id':
      return storeId.safeParse(value).success
        ? { kind: 'report', report: { app_ver_id: value } }
        : {
            kind: 'invalid',
            problem: `app_ver_id must be the store's version id (digits), not ${JSON.stringify(value)}`,
          };
    default:
      // A version is one word ('17.2.1'); a sentence that happens to start with "version" is text.
      if (/\s/.test(value)) return { kind: 'text' };
      return value.length <= 64
        ? { kind: 'report', report: { version: value } }
        : { kind: 'invalid', problem: 'version is longer than 64 characters' };
  }
}

export type VersionsLine =
  { kind: 'version'; version: StoreVersion } | { kind: 'invalid'; problem: string } | { kind: 'text' };

/** One stdout line of the --versions-command: a JSON object `{"app_ver_id": <number>, "version": "<string>"}`. */
export function parseVersionsLine(raw: string): VersionsLine {
  const line = raw.trim();
  if (!line.startsWith('{')) return { kind: 'text' };
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return { kind: 'invalid', problem: 'the line starts like JSON but is not' };
  }
  const parsed = storeVersion.safeParse(json);
  if (!parsed.success)
    return { kind: 'invalid', problem: 'expected {"app_ver_id": <number>, "version": "<string>"}' };
  return { kind: 'version', version: parsed.data };
}

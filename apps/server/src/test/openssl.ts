/** Checks made with the openssl command: a verifier that is not ours. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/**
 * Verifies a DER CMS SignedData against `caPem` (any key usage, at `at` or now) and returns the
 * signed content; throws when openssl refuses it.
 */
export function opensslVerifyCms(der: Buffer, caPem: string, at?: Date): Buffer {
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-openssl-'));
  try {
    writeFileSync(path.join(dir, 'ca.pem'), caPem);
    writeFileSync(path.join(dir, 'signed.der'), der);
    const atTime = at === undefined ? [] : ['-attime', String(Math.floor(at.getTime() / 1000))];
    return execFileSync(
      'openssl',
      [
        'cms',
        '-verify',
        '-inform',
        'DER',
        '-in',
        'signed.der',
        '-CAfile',
        'ca.pem',
        '-purpose',
        'any',
        ...atTime,
      ],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

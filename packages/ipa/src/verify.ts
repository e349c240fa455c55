import { check, type CheckOptions, type CheckReport } from './check.js';
import { isIpaError } from './errors.js';

export type DecryptedVerdict =
  | { readonly ok: true; readonly report: CheckReport; readonly version: string }
  | { readonly ok: false; readonly reason: string };

/**
 * Whether an IPA is a usable decrypted app: a safe archive with one app, every Mach-O slice
 * decrypted (cryptid 0), a version in its Info.plist and, when `expected.bundleId` is given, that
 * bundle id. A refusal carries a sentence saying what was found, for logs and for people; an
 * unreadable archive is a refusal too, any other error (a missing file) is thrown.
 */
export async function verifyDecrypted(
  ipaPath: string,
  expected: { bundleId?: string } = {},
  options: CheckOptions = {},
): Promise<DecryptedVerdict> {
  let report: CheckReport;
  try {
    report = await check(ipaPath, options);
  } catch (err) {
    if (isIpaError(err)) return { ok: false, reason: `The IPA is not usable: ${err.message}` };
    throw err;
  }
  if (!report.decrypted) {
    const encrypted = report.machOs
      .filter((m) => m.slices.some((s) => s.cryptid !== 0))
      .map((m) => m.path)
      .slice(0, 3);
    return { ok: false, reason: `The IPA is still encrypted (cryptid is not 0 in ${encrypted.join(', ')}).` };
  }
  if (expected.bundleId !== undefined && report.bundleId !== expected.bundleId) {
    return { ok: false, reason: `The IPA is ${report.bundleId}, not the requested ${expected.bundleId}.` };
  }
  const version = report.shortVersion ?? report.bundleVersion;
  if (!version) return { ok: false, reason: 'The IPA names no version in its Info.plist.' };
  return { ok: true, report, version };
}

/**
 * The install preflight (docs/sign-service.md, Install preflight): before an install is answered,
 * what iOS checks when it installs and launches an app, from what the artifact's row recorded when
 * it was signed (no IPA is read): the embedded profile has not expired, the signing certificate is
 * within its dates and is one of the profile's DeveloperCertificates, and its issuer has not
 * revoked it (OCSP). The devices the profile lists are check-sign's own 406 (service.ts).
 */
import type { CertificateStatus } from '../identity/certificates.js';
import type { SignRow } from './queries.js';
import type { ErrorCode } from '../../platform/error-codes.js';

export type PreflightProblem =
  | { kind: 'revoked'; at: Date; by: 'dev' | 'apple' | null }
  | { kind: 'certificate-expired'; at: Date }
  | { kind: 'certificate-not-yet-valid'; at: Date }
  | { kind: 'profile-expired'; at: Date }
  | { kind: 'not-in-profile' };

/** What the row recorded at commit; artifacts signed before it was recorded have nulls and pass. */
export type ArtifactFacts = Pick<
  SignRow,
  'certFingerprint' | 'certNotBefore' | 'certNotAfter' | 'profileExpiresAt' | 'profileCertificates'
>;

/** The first thing iOS would refuse about the artifact at `now`, or undefined when it installs. */
export async function preflight(
  row: ArtifactFacts,
  now: Date,
  certificateStatus: (
    fingerprint: string,
  ) => Promise<Pick<CertificateStatus, 'state' | 'revokedAt' | 'identityKind'>>,
): Promise<PreflightProblem | undefined> {
  const t = now.getTime();
  if (row.profileExpiresAt && row.profileExpiresAt.getTime() <= t)
    return { kind: 'profile-expired', at: row.profileExpiresAt };
  if (row.certNotAfter && row.certNotAfter.getTime() <= t)
    return { kind: 'certificate-expired', at: row.certNotAfter };
  if (row.certNotBefore && row.certNotBefore.getTime() > t)
    return { kind: 'certificate-not-yet-valid', at: row.certNotBefore };
  if (row.certFingerprint === null) return undefined;
  if (row.profileCertificates && !row.profileCertificates.includes(row.certFingerprint))
    return { kind: 'not-in-profile' };
  // Unknown and unanswered count as good, as iOS treats them (a responder that is down blocks nothing).
  const status = await certificateStatus(row.certFingerprint);
  if (status.state === 'revoked')
    return { kind: 'revoked', at: status.revokedAt ?? now, by: status.identityKind };
  return undefined;
}

/** Whether the certificate or the profile expires within `renewBeforeMs`: recovery renews them before. */
export function expiresSoon(row: ArtifactFacts, now: Date, renewBeforeMs: number): boolean {
  const limit = now.getTime() + renewBeforeMs;
  return (
    (row.certNotAfter?.getTime() ?? Infinity) < limit || (row.profileExpiresAt?.getTime() ?? Infinity) < limit
  );
}

/** Problems recovery cures by itself (a new certificate or profile, then a re-sign). */
export const recoveryCures = (problem: PreflightProblem) =>
  problem.kind === 'revoked' || problem.kind === 'certificate-expired' || problem.kind === 'profile-expired';

/** Problems a new sign cures: the web app offers 'Sign again' for them. */
export const signingCures = (problem: PreflightProblem) => problem.kind !== 'certificate-not-yet-valid';

const day = (date: Date) => date.toISOString().slice(0, 10);
const REVOKER = { apple: 'Apple', dev: "the dev identity's CA" } as const;

/**
 * The sentence a failed preflight answers with (409, text/plain). `isBeingSigned`: a re-sign is
 * queued or will be (recovery takes it), so the person only has to wait.
 */
export function problemSentence(problem: PreflightProblem, isBeingSigned: boolean): string {
  const cure = isBeingSigned ? '; it is being signed again.' : '. Sign it again to install it.';
  switch (problem.kind) {
    case 'revoked':
      return `The certificate that signed this app was revoked by ${problem.by ? REVOKER[problem.by] : 'its issuer'} on ${day(problem.at)}${cure}`;
    case 'certificate-expired':
      return `The certificate that signed this app expired on ${day(problem.at)}${cure}`;
    case 'profile-expired':
      return `The provisioning profile of this app expired on ${day(problem.at)}${cure}`;
    case 'not-in-profile':
      return `The provisioning profile of this app does not list the certificate that signed it${cure}`;
    case 'certificate-not-yet-valid':
      return `The certificate that signed this app is valid only from ${day(problem.at)}: check this server's clock.`;
  }
}

/** The error code of each problem, for the logs. */
export const PROBLEM_CODES = {
  revoked: 'CERTIFICATE_REVOKED',
  'certificate-expired': 'CERTIFICATE_EXPIRED',
  'certificate-not-yet-valid': 'CERTIFICATE_NOT_YET_VALID',
  'profile-expired': 'PROFILE_EXPIRED',
  'not-in-profile': 'CERTIFICATE_NOT_IN_PROFILE',
} as const satisfies Record<PreflightProblem['kind'], ErrorCode>;

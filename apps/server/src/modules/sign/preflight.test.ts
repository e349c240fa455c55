/**
 * What the install preflight refuses, from what an artifact's row recorded, and the sentence each
 * refusal answers with (the routes' 409 bodies; recovery.test.ts has them end to end).
 */
import { describe, expect, it } from 'vitest';
import { expiresSoon, preflight, problemSentence, signingCures, type ArtifactFacts } from './preflight.js';

const NOW = new Date('2026-06-15T12:00:00Z');
const DAY_MS = 86_400_000;
const facts: ArtifactFacts = {
  certFingerprint: 'aa'.repeat(32),
  certNotBefore: new Date('2026-01-01T00:00:00Z'),
  certNotAfter: new Date('2027-01-01T00:00:00Z'),
  profileExpiresAt: new Date('2027-01-01T00:00:00Z'),
  profileCertificates: ['aa'.repeat(32)],
};
type StatusOf = Parameters<typeof preflight>[2];
const good: StatusOf = async () => ({ state: 'good', revokedAt: null, identityKind: 'apple' });
const check = (changes: Partial<ArtifactFacts>, status: StatusOf = good) =>
  preflight({ ...facts, ...changes }, NOW, status);

describe('install preflight', () => {
  it('passes an artifact iOS installs, and one signed before its facts were recorded', async () => {
    expect(await check({})).toBeUndefined();
    const untracked = {
      certFingerprint: null,
      certNotBefore: null,
      certNotAfter: null,
      profileExpiresAt: null,
      profileCertificates: null,
    };
    expect(await check(untracked, async () => Promise.reject(new Error('not asked')))).toBeUndefined();
  });

  it("passes what the responder does not know, or was not asked ('not checked'), as iOS does", async () => {
    for (const state of ['unknown', 'not checked'] as const) {
      expect(await check({}, async () => ({ state, revokedAt: null, identityKind: 'dev' }))).toBeUndefined();
    }
  });

  it('refuses each thing iOS refuses, with a sentence that says what and when', async () => {
    const cases: Array<[Partial<ArtifactFacts>, string]> = [
      [
        { profileExpiresAt: new Date('2026-06-01T00:00:00Z') },
        'The provisioning profile of this app expired on 2026-06-01',
      ],
      [
        { certNotAfter: new Date('2026-06-14T00:00:00Z') },
        'The certificate that signed this app expired on 2026-06-14',
      ],
      [
        { profileCertificates: ['bb'.repeat(32)] },
        'The provisioning profile of this app does not list the certificate that signed it',
      ],
    ];
    for (const [changes, start] of cases) {
      const problem = (await check(changes))!;
      expect(signingCures(problem)).toBe(true);
      expect(problemSentence(problem, true)).toBe(`${start}; it is being signed again.`);
      expect(problemSentence(problem, false)).toBe(`${start}. Sign it again to install it.`);
    }
    const revoked = async () => ({
      state: 'revoked' as const,
      revokedAt: new Date('2026-06-10T08:00:00Z'),
      identityKind: 'apple' as const,
    });
    expect(problemSentence((await check({}, revoked))!, true)).toBe(
      'The certificate that signed this app was revoked by Apple on 2026-06-10; it is being signed again.',
    );
    const early = (await check({ certNotBefore: new Date('2026-07-01T00:00:00Z') }))!;
    expect(signingCures(early)).toBe(false);
    expect(problemSentence(early, false)).toBe(
      "The certificate that signed this app is valid only from 2026-07-01: check this server's clock.",
    );
  });

  it('tells a certificate or profile that expires within RENEW_BEFORE_DAYS from one that does not', () => {
    const renewBefore = 14 * DAY_MS;
    expect(expiresSoon(facts, NOW, renewBefore)).toBe(false);
    expect(
      expiresSoon({ ...facts, profileExpiresAt: new Date(NOW.getTime() + 10 * DAY_MS) }, NOW, renewBefore),
    ).toBe(true);
    expect(
      expiresSoon({ ...facts, certNotAfter: new Date(NOW.getTime() + 13 * DAY_MS) }, NOW, renewBefore),
    ).toBe(true);
  });
});

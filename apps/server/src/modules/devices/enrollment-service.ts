/**
 * UDID enrollment (docs/product.md, Screens, Validation and confirmations and Constants; docs/sign-service.md): a signed-in user downloads a
 * Profile Service .mobileconfig carrying a one-time token; the device posts its signed attributes
 * to the token's URL and is added to that user's list with status Add.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { SigningIdentity } from '@sideport/ipa';
import type { Database } from '../../db/client.js';
import { fail } from '../../platform/errors.js';
import type { EventBus } from '../../platform/events.js';
import type { Config } from '../../platform/config.js';
import { buildEnrollmentProfile, loadProfileSigner, parseEnrollmentAnswer } from './enrollment.js';
import * as q from './queries.js';

/** Where devices post their answers; the token follows. Exempt from the cross-site check (it is not a browser's). */
export const ENROLLMENT_PATH = '/api/udid/enroll/';
/** docs/product.md, Constants: 'Profile install window: 10 minutes'. */
export const ENROLLMENT_TOKEN_TTL_MS = 10 * 60_000;
/** Profiles a user may hold unused at once (two devices enrolling together is normal; a hundred is not). */
const MAX_LIVE_TOKENS = 10;
const TOKEN_BYTES = 32;
/** What a token in an enrollment URL may look like (ours are 43 characters of base64url). */
export const ENROLLMENT_TOKEN_PATTERN = /^[A-Za-z0-9_-]{32,128}$/;

export interface EnrollmentServiceDeps {
  db: Database;
  clock: () => Date;
  bus: Pick<EventBus, 'publish'>;
  /** PROFILE_SIGNING_P12: the .mobileconfig is signed with it when set. */
  profileSigner?: SigningIdentity | undefined;
  /** DEVICE_CA_PEM: answers must chain to it when set. */
  deviceCaPem?: string | undefined;
  random?: (bytes: number) => Buffer;
}

/** Apple-silicon Macs report Mac14,2, MacBookPro18,3, iMac21,1, Macmini9,1 (and VirtualMac2,1 in a VM). */
export const isMacProduct = (product: string) => /mac/i.test(product);

const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/** The operator's enrollment settings, as the server and the CLI both read them. */
export function enrollmentSettings(
  config: Pick<Config, 'PROFILE_SIGNING_P12' | 'PROFILE_SIGNING_P12_PASSWORD' | 'DEVICE_CA_PEM'>,
): Pick<EnrollmentServiceDeps, 'profileSigner' | 'deviceCaPem'> {
  return {
    profileSigner: config.PROFILE_SIGNING_P12
      ? loadProfileSigner(readFileSync(config.PROFILE_SIGNING_P12), config.PROFILE_SIGNING_P12_PASSWORD ?? '')
      : undefined,
    deviceCaPem: config.DEVICE_CA_PEM,
  };
}

export function createEnrollmentService({
  db,
  clock,
  bus,
  profileSigner,
  deviceCaPem,
  random = randomBytes,
}: EnrollmentServiceDeps) {
  return {
    /** The .mobileconfig for `userId`, whose answer goes to `baseUrl` + ENROLLMENT_PATH + a new token. */
    async issueProfile(userId: string, baseUrl: string): Promise<Buffer> {
      const now = clock();
      if ((await q.countLiveEnrollmentTokens(db, userId, now)) >= MAX_LIVE_TOKENS) {
        throw fail('ENROLLMENT_LIMIT', MAX_LIVE_TOKENS);
      }
      const token = random(TOKEN_BYTES).toString('base64url');
      await q.insertEnrollmentToken(db, {
        tokenHash: hashToken(token),
        userId,
        createdAt: now,
        expiresAt: new Date(now.getTime() + ENROLLMENT_TOKEN_TTL_MS),
      });
      return buildEnrollmentProfile({
        url: `${baseUrl}${ENROLLMENT_PATH}${token}`,
        challenge: token,
        clock,
        ...(profileSigner ? { signer: profileSigner } : {}),
      });
    },

    /**
     * The device's answer to the URL of `token`: checked (token, signature, chain, challenge), then
     * the device is the token's user's, status Add. Every refusal is an AppError and changes
     * nothing; the token is used up only by an answer that is accepted.
     */
    async enroll(token: string, body: Buffer): Promise<{ userId: string; added: boolean }> {
      const tokenHash = hashToken(token);
      const issued = await q.findEnrollmentToken(db, tokenHash);
      if (!issued) throw fail('ENROLLMENT_LINK_UNKNOWN');
      if (issued.usedAt) throw fail('ENROLLMENT_LINK_USED', true);
      if (issued.expiresAt.getTime() <= clock().getTime()) {
        throw fail('ENROLLMENT_LINK_EXPIRED');
      }
      const answer = await parseEnrollmentAnswer(body, deviceCaPem === undefined ? {} : { deviceCaPem });
      // The challenge is signed by the device: an answer made for another link is not moved to this one.
      if (!timingSafeEqual(Buffer.from(hashToken(answer.challenge), 'hex'), Buffer.from(tokenHash, 'hex'))) {
        throw fail('ENROLLMENT_CHALLENGE_MISMATCH');
      }
      return db.transaction(async (tx) => {
        const userId = await q.consumeEnrollmentToken(tx, tokenHash, clock());
        if (userId === undefined) throw fail('ENROLLMENT_LINK_USED', false);
        const device = await q.insertEnrolledDevice(tx, {
          userId,
          product: answer.product,
          udid: answer.udid,
          platform: isMacProduct(answer.product) ? 'MAC_OS' : 'IOS',
          deviceName: answer.deviceName ?? null,
        });
        await bus.publish({ kind: 'live', event: { type: 'device' }, userId }, tx);
        return { userId, added: device !== undefined };
      });
    },
  };
}

export type EnrollmentService = ReturnType<typeof createEnrollmentService>;

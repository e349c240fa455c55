import { createHash, randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import { LRUCache } from 'lru-cache';
import type { Credentials } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { fail } from '../../platform/errors.js';
import { publishEvent } from '../../platform/events.js';
import * as q from './queries.js';

export interface AuthServiceDeps {
  db: Database;
  clock: () => Date;
  randomToken?: () => string;
  /** How long this process trusts a session lookup; sign-out here evicts at once (0: never cache). */
  sessionCacheMs?: number;
  limits: {
    sessionTtlDays: number;
    signInPerId: number;
    signInPerAddress: number;
    signInWindowMinutes: number;
  };
}

export interface SessionUser {
  id: string;
  grade: number;
}

/** A signed-in session: its user, its key (the token's hash, as stored) and when it ends. */
export interface Session {
  user: SessionUser;
  key: string;
  expiresAt: Date;
}

// @node-rs/argon2 defaults to argon2id (m=19 MiB, t=2, p=1), OWASP's recommended parameters.
const ARGON2 = {} as const;
// Verified when the id is unknown, so a wrong id takes as long as a wrong password.
let dummyHash: Promise<string> | undefined;

export const hashToken = (token: string) => createHash('sha256').update(token).digest('base64url');

/** The client sends md5(password) as hex; case must not matter, so hash its lowercase form. */
const normalizeMd5 = (pw: string) => pw.toLowerCase();

/** What the database keeps of a password: argon2id of the md5 the client sent. */
export const hashPassword = (passwordMd5: string) => hash(normalizeMd5(passwordMd5), ARGON2);

export function createAuthService(deps: AuthServiceDeps) {
  const { db, clock, limits } = deps;
  const randomToken = deps.randomToken ?? (() => randomBytes(32).toString('base64url'));
  const windowMs = limits.signInWindowMinutes * 60_000;
  // Every signed-in call looks its session up; a brief per-process cache spares the database. Entries
  // keep the expiry so the clock still ends them; revocation on another process shows within the TTL.
  const sessionCache = new LRUCache<string, { user: SessionUser; expiresAt: Date } | { user: null }>({
    max: 10_000,
    ttl: Math.max(deps.sessionCacheMs ?? 0, 1),
  });
  const cacheSessions = (deps.sessionCacheMs ?? 0) > 0;

  async function findSession(token: string | undefined): Promise<Session | undefined> {
    if (!token || token.length > 128) return undefined;
    const key = hashToken(token);
    const now = clock();
    const cached = cacheSessions ? sessionCache.get(key) : undefined;
    if (cached) {
      return cached.user && cached.expiresAt > now
        ? { user: cached.user, key, expiresAt: cached.expiresAt }
        : undefined;
    }
    const found = await q.findSessionUser(db, key, now);
    if (cacheSessions) {
      sessionCache.set(
        key,
        found ? { user: { id: found.id, grade: found.grade }, expiresAt: found.expiresAt } : { user: null },
      );
    }
    return found
      ? { user: { id: found.id, grade: found.grade }, key, expiresAt: found.expiresAt }
      : undefined;
  }

  async function openSession(userId: string) {
    const token = randomToken();
    const now = clock();
    const expiresAt = new Date(now.getTime() + limits.sessionTtlDays * 86_400_000);
    await q.insertSession(db, { tokenHash: hashToken(token), userId, createdAt: now, expiresAt });
    return { token, expiresAt };
  }

  return {
    /** A new session of `userId` (sign-in, sign-up and the first admin's setup link). */
    openSession,

    async signUp(input: Credentials, address: string) {
      const attempts = await q.hitRateLimit(db, `sign-up:ip:${address}`, clock(), windowMs);
      if (attempts > limits.signInPerAddress) {
        throw fail('SIGN_UP_LIMIT');
      }
      const passwordHash = await hash(normalizeMd5(input.pw), ARGON2);
      const created = await q.insertUser(db, { id: input.id, passwordHash });
      if (!created) throw fail('ID_TAKEN');
      const session = await openSession(input.id);
      return { grade: 0, ...session };
    },

    /**
     * Sign-in limits (docs/security.md, Sessions and passwords). Guessing is bounded per client
     * address and slowed per id, but a guesser cannot lock the owner out:
     * - an address makes at most SIGN_IN_LIMIT_PER_ADDRESS attempts per window, whatever the ids;
     * - an address makes at most SIGN_IN_LIMIT_PER_ID attempts on one id since its last success there;
     * - once an id has had SIGN_IN_LIMIT_PER_ID wrong passwords in the window, from anywhere, each
     *   address gets one attempt on it: many addresses guessing one id get one guess each, while
     *   the owner, from an address that has not been guessing, still signs in with the right password.
     * Attempts are counted before the password is checked (one statement each), so a burst of
     * parallel requests cannot slip past a count; a refused attempt costs no argon2.
     */
    async signIn(input: Credentials, address: string) {
      const now = clock();
      const id = input.id.toLowerCase();
      const failedKey = `sign-in:failed:${id}`;
      const pairKey = `sign-in:id-address:${id}@${address}`;
      const [perAddress, perPair, failedOnId] = await Promise.all([
        q.hitRateLimit(db, `sign-in:ip:${address}`, now, windowMs),
        q.hitRateLimit(db, pairKey, now, windowMs),
        q.readRateLimit(db, failedKey, now),
      ]);
      const pairLimit = failedOnId >= limits.signInPerId ? 1 : limits.signInPerId;
      if (perAddress > limits.signInPerAddress || perPair > pairLimit) {
        throw fail('SIGN_IN_LIMIT');
      }
      const user = await q.findUserById(db, input.id);
      const passwordHash = user?.passwordHash ?? (await (dummyHash ??= hash('0'.repeat(32), ARGON2)));
      const matches = await verify(passwordHash, normalizeMd5(input.pw));
      if (!user || !matches) {
        await q.hitRateLimit(db, failedKey, now, windowMs);
        throw fail('WRONG_CREDENTIALS');
      }
      // The id's failures stay counted: the owner signing in does not give guessers their tries back.
      await q.clearRateLimit(db, pairKey);
      const session = await openSession(user.id);
      return { grade: user.grade, ...session };
    },

    /** Ends the session of `token`; its event streams, on every process, close (events/routes.ts). */
    async signOut(token: string | undefined) {
      if (!token) return;
      const key = hashToken(token);
      sessionCache.delete(key);
      await q.deleteSession(db, key);
      await publishEvent(db, { kind: 'session-ended', session: key });
    },

    /** The session of a cookie, or undefined when absent, unknown or expired. */
    findSession,

    /** The signed-in user of a session cookie, or undefined when absent, unknown or expired. */
    async authenticate(token: string | undefined): Promise<SessionUser | undefined> {
      return (await findSession(token))?.user;
    },

    async findUser(id: string) {
      return q.findUserById(db, id);
    },

    async setGrade(id: string, grade: number) {
      sessionCache.clear();
      return q.updateUserGrade(db, id, grade);
    },

    /**
     * Creates the account, or sets its password and grade when it exists (operator bootstrap:
     * ADMIN_PASSWORD, user:create). A new password ends every session of the account, so whoever
     * signed in with the old one is out; the same password again leaves them be.
     */
    async ensureUser(id: string, passwordMd5: string, grade: number) {
      const md5 = normalizeMd5(passwordMd5);
      const passwordHash = await hash(md5, ARGON2);
      if (await q.insertUser(db, { id, passwordHash, grade })) return;
      const existing = await q.findUserById(db, id);
      if (!existing) throw new Error(`Could not create or find user ${id}`);
      if (!(await verify(existing.passwordHash, md5))) {
        await q.replacePassword(db, existing.id, passwordHash);
        // Their event streams close too, on every process (a running server hears the CLI's change).
        await publishEvent(db, { kind: 'sessions-ended', userId: existing.id });
      }
      await q.updateUserGrade(db, existing.id, grade);
      // This process's cached lookups must not outlive the ended sessions or the old grade.
      sessionCache.clear();
    },

    /** Hourly: ended sessions, and the rate-limit counters of ended windows (one per id and address tried). */
    async purgeExpiredSessions() {
      await q.deleteExpiredSessions(db, clock());
      await q.deleteEndedRateLimits(db, clock());
    },
  };
}

export type AuthService = ReturnType<typeof createAuthService>;

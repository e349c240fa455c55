/**
 * The first admin, without a default password: while no account has a grade above 0 and ADMIN_ID
 * is unset, each start makes a one-time setup link and prints it once. Whoever opens it creates the
 * admin account there (docs/security.md, "The setup link").
 *
 * Only the token's sha256 is kept (in settings), so a copy of the database opens nothing. A new
 * start replaces it, so only the link printed last works; using it deletes it, in the same
 * transaction that creates the account, so two visitors racing cannot both become admin.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Credentials } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { fail } from '../../platform/errors.js';
import * as q from './queries.js';
import { hashPassword, type AuthService } from './service.js';

export const SETUP_PATH = '/setup/';
/** What a setup token in a link may look like (ours are 43 characters of base64url). */
export const SETUP_TOKEN_PATTERN = /^[A-Za-z0-9_-]{32,128}$/;
const SETUP_SETTING = 'setup_token_sha256';
const ADMIN_GRADE = 1;

const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

const notValid = () => fail('SETUP_LINK_UNKNOWN');
const used = () => fail('SETUP_LINK_USED');

export interface SetupLinkDeps {
  db: Database;
  clock: () => Date;
  auth: Pick<AuthService, 'openSession'>;
  /** Attempts per client address per window, as sign-up counts them. */
  limits: { perAddress: number; windowMinutes: number };
  random?: (bytes: number) => Buffer;
}

export function createSetupLinkService({ db, clock, auth, limits, random = randomBytes }: SetupLinkDeps) {
  /** The kept hash of `token`; refused once any admin exists (however it was made) or for another token. */
  async function check(token: string): Promise<string> {
    if (await q.hasAdmin(db)) throw used();
    const tokenHash = hashToken(token);
    const kept = await q.readSetting(db, SETUP_SETTING);
    if (
      kept === undefined ||
      kept.length !== tokenHash.length ||
      !timingSafeEqual(Buffer.from(kept), Buffer.from(tokenHash))
    )
      throw notValid();
    return tokenHash;
  }

  return {
    /**
     * A new setup token when no admin exists (the previous one stops working), or undefined, and
     * then any old token is dropped: an admin made another way closes the setup link too.
     */
    async issue(): Promise<string | undefined> {
      if (await q.hasAdmin(db)) {
        await q.deleteSetting(db, SETUP_SETTING);
        return undefined;
      }
      const token = random(32).toString('base64url');
      await q.writeSetting(db, SETUP_SETTING, hashToken(token));
      return token;
    },

    /** Resolves when `token` can still create the admin; an AppError with the sentence otherwise. */
    async check(token: string): Promise<void> {
      await check(token);
    },

    /** Creates the admin account (grade 1) with the link and signs it in; the link is then used up. */
    async createAdmin(token: string, input: Credentials, address: string) {
      const attempts = await q.hitRateLimit(
        db,
        `setup:ip:${address}`,
        clock(),
        limits.windowMinutes * 60_000,
      );
      if (attempts > limits.perAddress) throw fail('SETUP_LIMIT');
      const tokenHash = await check(token);
      const passwordHash = await hashPassword(input.pw);
      await db.transaction(async (tx) => {
        if (!(await q.takeSetting(tx, SETUP_SETTING, tokenHash))) throw used();
        // A taken id rolls the transaction back: the link stays usable with another id.
        if (!(await q.insertUser(tx, { id: input.id, passwordHash, grade: ADMIN_GRADE }))) {
          throw fail('ID_TAKEN');
        }
      });
      return { grade: ADMIN_GRADE, ...(await auth.openSession(input.id)) };
    },
  };
}

export type SetupLinkService = ReturnType<typeof createSetupLinkService>;

/** The link printed at start: PUBLIC_URL's origin, or this machine's address on PORT. */
export function setupUrl(token: string, where: { publicUrl?: string | undefined; port: number }): string {
  const origin = where.publicUrl ? new URL(where.publicUrl).origin : `http://localhost:${where.port}`;
  return `${origin}${SETUP_PATH}${token}`;
}

import { sql } from 'drizzle-orm';
import { queryRows, type Database } from '../../db/client.js';
import { apps, signingCertificates, signRequests, subscriptions, versions } from '../../db/schema/index.js';
import { ENTITLING_STATUSES } from '../billing/schemas.js';

/** An artifact at rest whose certificate or profile no longer holds, or soon will not. */
export interface ThreatenedArtifact {
  userId: string;
  artifactId: string;
  title: string;
  /** A re-sign of it was given up (recovery does not try it again; its owner's sign does). */
  lastReason: string | null;
  certFingerprint: string | null;
  certNotAfter: Date | null;
  certRevoked: boolean;
  profileUuid: string | null;
  profileExpiresAt: Date | null;
  /** Where its version's card is (the Sign action); null for Feather and versions no longer listed. */
  country: string | null;
  name: string | null;
}

const toDate = (v: Date | string | null) => (v === null ? null : new Date(v));

/**
 * Done artifacts nobody is signing again (state idle) whose certificate is revoked, or whose
 * certificate or profile ends before `horizon`, oldest end first. An artifact of an app another
 * version of which the user installed (or signed) later in the same mode is left out: iOS keeps
 * one app per bundle id, and that later one is what the phone holds.
 */
export async function threatenedArtifacts(db: Database, horizon: Date): Promise<ThreatenedArtifact[]> {
  const rows = await queryRows<{
    user_id: string;
    artifact_id: string;
    title: string;
    last_reason: string | null;
    cert_fingerprint: string | null;
    cert_not_after: Date | string | null;
    revoked: boolean;
    profile_uuid: string | null;
    profile_expires_at: Date | string | null;
    country: string | null;
    name: string | null;
  }>(
    db,
    sql`
      select s.user_id, s.artifact_id, s.title, s.last_reason, s.cert_fingerprint, s.cert_not_after,
             coalesce(c.ocsp_status = 'revoked', false) as revoked, s.profile_uuid, s.profile_expires_at,
             v.country, a.name
      from ${signRequests} s
      left join ${signingCertificates} c on c.fingerprint = s.cert_fingerprint
      left join lateral (
        select country from ${versions} v
        where s.source = 'version' and v.app_id = s.app_id and v.app_ver_id = s.app_ver_id
        order by country limit 1
      ) v on true
      left join ${apps} a on a.country = v.country and a.app_id = s.app_id
      where s.file_key is not null and s.artifact_id is not null and s.status = 'Done' and s.state = 'idle'
        and (c.ocsp_status = 'revoked' or s.cert_not_after < ${horizon} or s.profile_expires_at < ${horizon})
        and not exists (
          select 1 from ${signRequests} later
          where later.user_id = s.user_id and later.app_id = s.app_id and later.sign_type = s.sign_type
            and later.id <> s.id and later.file_key is not null
            and coalesce(later.last_used_at, later.signed_at) > coalesce(s.last_used_at, s.signed_at))
      order by least(s.cert_not_after, s.profile_expires_at), s.id`,
  );
  return rows.map((r) => ({
    userId: r.user_id,
    artifactId: r.artifact_id,
    title: r.title,
    lastReason: r.last_reason,
    certFingerprint: r.cert_fingerprint,
    certNotAfter: toDate(r.cert_not_after),
    certRevoked: r.revoked,
    profileUuid: r.profile_uuid,
    profileExpiresAt: toDate(r.profile_expires_at),
    country: r.country,
    name: r.name,
  }));
}

/**
 * Users whose premium ends between `now` and `horizon` with nothing to renew it: every
 * subscription that entitles them ends by then, and each said it ends with its paid period.
 */
export async function plansEnding(
  db: Database,
  now: Date,
  horizon: Date,
): Promise<Array<{ userId: string; endsAt: Date; plan: number }>> {
  const entitling = sql.join(
    ENTITLING_STATUSES.map((s) => sql`${s}`),
    sql`, `,
  );
  const rows = await queryRows<{ user_id: string; ends_at: Date | string; plan: number }>(
    db,
    sql`
      select user_id, max(current_period_end) as ends_at,
             (array_agg(plan order by current_period_end desc))[1] as plan
      from ${subscriptions}
      where status in (${entitling}) and current_period_end > ${now}
      group by user_id
      having max(current_period_end) <= ${horizon} and bool_and(ends_at_period_end)`,
  );
  return rows.map((r) => ({ userId: r.user_id, endsAt: new Date(r.ends_at), plan: r.plan }));
}

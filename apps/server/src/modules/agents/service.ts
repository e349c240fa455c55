import { createHash, randomBytes } from 'node:crypto';
import type { AgentSummary, CreatedAgent } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { notFound } from '../../platform/errors.js';
import { createMicroCache } from '../../platform/micro-cache.js';
import * as q from './queries.js';

export interface AgentServiceDeps {
  db: Database;
  clock: () => Date;
  /** Gives a revoked agent's jobs back to the queue (the decrypt job service). */
  releaseJobsOf: (agentId: number) => Promise<void>;
  /** How long one process trusts a token lookup; revocation on this process is immediate. */
  cacheMs?: number;
  /** An agent seen within this long counts as online (see presence). */
  onlineWithinMs?: number;
}

const TOKEN_PREFIX = 'spa_';
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');
/** Last-seen is written at most this often per agent: a busy agent need not write on every call. */
const TOUCH_EVERY_MS = 5000;
/**
 * An idle agent is seen at the end of each long-polled claim (30 s at most) and a busy one at each
 * heartbeat (a third of the lease): two minutes covers both with room for a slow network.
 */
export const AGENT_ONLINE_WITHIN_MS = 120_000;
/** Every page load asks for presence (GET /api/config): one query per process per this long. */
const PRESENCE_CACHE_MS = 5000;

export function createAgentService({
  db,
  clock,
  releaseJobsOf,
  cacheMs = 2000,
  onlineWithinMs = AGENT_ONLINE_WITHIN_MS,
}: AgentServiceDeps) {
  const cache = createMicroCache<{ agent: q.AgentRow | undefined }>({ ttlMs: cacheMs, max: 1000 });
  const presenceCache = createMicroCache<AgentPresence>({ ttlMs: PRESENCE_CACHE_MS, max: 1 });
  const touchedAt = new Map<number, number>();

  return {
    /** Made by an admin; the token is in this answer only (the database keeps its sha256). */
    async create(name: string): Promise<CreatedAgent> {
      const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
      const row = await q.insertAgent(db, { name, tokenHash: hashToken(token), now: clock() });
      return { id: String(row.id), name: row.name, token };
    },

    async list(): Promise<AgentSummary[]> {
      const rows = await q.listAgentsWithJobs(db);
      return rows.map(({ agent, jobCountry, jobAppId, jobKind }) => ({
        id: String(agent.id),
        name: agent.name,
        created_at: agent.createdAt.toISOString(),
        last_seen_at: agent.lastSeenAt?.toISOString() ?? null,
        current_job: jobCountry === null ? null : `${jobKind} ${jobCountry}/${jobAppId}`,
        done_count: agent.doneCount,
        failed_count: agent.failedCount,
      }));
    },

    async revoke(id: number) {
      await releaseJobsOf(id);
      const row = await q.deleteAgent(db, id);
      if (!row) throw notFound('This agent');
      cache.clear();
      presenceCache.clear();
      return row;
    },

    /** The agent a bearer token belongs to, or undefined (unknown or revoked). */
    async authenticate(token: string | undefined) {
      if (!token || !token.startsWith(TOKEN_PREFIX) || token.length > 200) return undefined;
      const hash = hashToken(token);
      const { agent } = await cache.get(hash, async () => ({
        agent: await q.findAgentByTokenHash(db, hash),
      }));
      return agent ? { id: agent.id, name: agent.name } : undefined;
    },

    /**
     * Last seen: written after a call the agent made successfully (a refused call changes nothing),
     * at most every few seconds per agent.
     */
    async markSeen(agentId: number) {
      const now = clock().getTime();
      if (now - (touchedAt.get(agentId) ?? 0) < TOUCH_EVERY_MS) return;
      touchedAt.set(agentId, now);
      await q.touchAgent(db, agentId, clock());
      // An agent coming online is news this process tells at once, not after the cache's 5 s.
      presenceCache.clear();
    },

    /** How many agents are online and when any was last seen; cached briefly, as every page asks. */
    presence(): Promise<AgentPresence> {
      return presenceCache.get('presence', async () => {
        const found = await q.agentPresence(db, new Date(clock().getTime() - onlineWithinMs));
        return { online: found.online, lastSeenAt: found.lastSeenAt };
      });
    },
  };
}

export interface AgentPresence {
  online: number;
  lastSeenAt: Date | null;
}

export type AgentService = ReturnType<typeof createAgentService>;

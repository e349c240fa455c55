import { desc, eq, gt, max, sql } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { agents, jobs } from '../../db/schema/index.js';

export type AgentRow = typeof agents.$inferSelect;

export async function insertAgent(db: Database, agent: { name: string; tokenHash: string; now: Date }) {
  const [row] = await db
    .insert(agents)
    .values({ name: agent.name, tokenHash: agent.tokenHash, createdAt: agent.now })
    .returning();
  return row!;
}

export async function findAgentByTokenHash(db: Database, tokenHash: string) {
  const [row] = await db.select().from(agents).where(eq(agents.tokenHash, tokenHash));
  return row;
}

export async function touchAgent(db: Database, id: number, now: Date) {
  await db.update(agents).set({ lastSeenAt: now }).where(eq(agents.id, id));
}

export async function deleteAgent(db: Database, id: number) {
  const [row] = await db.delete(agents).where(eq(agents.id, id)).returning();
  return row;
}

/** Every agent with the job it holds now (if any), newest first. */
export async function listAgentsWithJobs(db: Database) {
  return db
    .select({
      agent: agents,
      jobCountry: jobs.country,
      jobAppId: jobs.appId,
      jobKind: jobs.kind,
    })
    .from(agents)
    .leftJoin(jobs, sql`${jobs.agentId} = ${agents.id} and ${jobs.state} = 'leased'`)
    .orderBy(desc(agents.id));
}

/** How many agents were seen after `since`, and when any agent was last seen. */
export async function agentPresence(db: Database, since: Date) {
  const [row] = await db
    .select({
      online: sql<number>`count(*) filter (where ${gt(agents.lastSeenAt, since)})::int`,
      lastSeenAt: max(agents.lastSeenAt),
    })
    .from(agents);
  return { online: row?.online ?? 0, lastSeenAt: row?.lastSeenAt ?? null };
}

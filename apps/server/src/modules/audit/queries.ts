import { desc } from 'drizzle-orm';
import type { Database } from '../../db/client.js';
import { auditLog } from '../../db/schema/index.js';

export async function recordAudit(db: Database, actor: string, action: string, subject: object) {
  await db.insert(auditLog).values({ actor, action, subject });
}

export async function auditPage(db: Database, page: number, pageSize: number) {
  return db
    .select()
    .from(auditLog)
    .orderBy(desc(auditLog.id))
    .limit(pageSize)
    .offset(page * pageSize);
}

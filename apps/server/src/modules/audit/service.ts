import type { Database } from '../../db/client.js';
import * as q from './queries.js';

/**
 * Who did what, and when (docs/architecture.md, Operator policy): what admins and operators
 * changed (agents, queue entries, versions, devices, the signing identity and its accounts), and
 * what recovery and the account pool did by themselves. Written by each module that acts, read by
 * the admin console.
 */
export function createAuditLog({ db }: { db: Database }) {
  return {
    /** One line of the log: `actor` (a user id, or a system actor such as 'operator (cli)') did `action` to `subject`. */
    record: (actor: string, action: string, subject: object) => q.recordAudit(db, actor, action, subject),
    /** The admin console's page of the log, newest first. */
    page: (page: number, pageSize: number) => q.auditPage(db, page, pageSize),
  };
}

export type AuditLog = ReturnType<typeof createAuditLog>;
/** What a module that acts is given: the log's `record`. */
export type RecordAudit = AuditLog['record'];

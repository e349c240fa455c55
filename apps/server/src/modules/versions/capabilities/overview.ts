/**
 * The admin console's view of the capability report: of the newest Done versions, those whose
 * signing loses capabilities, each with the parts that lose it and what the operator could do
 * (packages/ipa, src/capabilities/catalog.ts). Computed for the wildcard profile every identity
 * of this server makes; the team changes no loss.
 */
import type { AdminCapabilityEntry } from '@sideport/contracts';
import { capabilityReport, wildcardProfile } from '@sideport/ipa';
import type { Database } from '../../../db/client.js';
import * as q from './queries.js';

/** Versions looked at, newest Done first. */
const LOOKED_AT = 200;

export async function capabilityOverview(db: Database): Promise<AdminCapabilityEntry[]> {
  const rows = await q.doneWithComponents(db, LOOKED_AT);
  const profile = wildcardProfile('TEAMID');
  return rows.flatMap((row) => {
    const report = capabilityReport({ components: row.components, profile });
    if (report.lost === 0 && report.components.every((c) => c.outcome === 'signed')) return [];
    const lost = new Map<string, AdminCapabilityEntry['lost'][number]>();
    for (const component of report.components)
      for (const outcome of component.capabilities.filter((c) => c.status === 'lost')) {
        const entry = lost.get(outcome.id) ?? {
          id: outcome.id,
          name: outcome.name,
          parts: [],
          operator: outcome.operator,
        };
        entry.parts.push(component.name);
        lost.set(outcome.id, entry);
      }
    return [
      {
        app_id: String(row.appId),
        app_ver_id: String(row.appVerId),
        name: row.name ?? String(row.appId),
        version: row.version ?? '',
        summary: report.summary,
        lost: [...lost.values()],
      },
    ];
  });
}

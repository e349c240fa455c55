/**
 * What signing keeps of a Done version's capabilities, from its entry (GET /api/version/...,
 * packages/contracts capabilities.ts): the report of a mode, and the sentences the sign
 * confirmation and the modal's detail show.
 */
import type { AppEntry, ModeCapabilities, SignType } from '@sideport/contracts';

/** The report of one mode; undefined while the server reads the version (or before it is Done). */
export const modeCapabilities = (
  entry: Pick<AppEntry, 'capabilities'>,
  type: SignType,
): ModeCapabilities | undefined => entry.capabilities?.modes.find((m) => m.sign_types.includes(type));

/** Whether a mode's report has anything to say beyond 'Keeps all its capabilities.'. */
export const hasNews = (report: ModeCapabilities) =>
  report.lost > 0 || report.changed > 0 || report.components.some((c) => c.note !== null);

/** Each different sentence of a report: parts that cannot be signed or will not install, then losses, then changes. */
export function reportSentences(report: ModeCapabilities): string[] {
  const notes = report.components.flatMap((c) => (c.note === null ? [] : [c.note]));
  const of = (status: 'lost' | 'changed') =>
    report.components.flatMap((c) =>
      c.capabilities.filter((o) => o.status === status && o.sentence !== null).map((o) => o.sentence!),
    );
  return [...new Set([...notes, ...of('lost'), ...of('changed')])];
}

/** Lines a confirmation shows at most; the rest are counted. */
const MAX_CONFIRM_LINES = 6;

/** Added to the sign confirmation after the question: what the person will notice once it is signed. */
export function confirmationAddendum(entry: Pick<AppEntry, 'capabilities'>, type: SignType): string {
  const report = modeCapabilities(entry, type);
  if (!report || !hasNews(report)) return '';
  const sentences = reportSentences(report);
  const shown = sentences.slice(0, MAX_CONFIRM_LINES).map((s) => `- ${s}`);
  const more = sentences.length - shown.length;
  return `\n\n${report.summary}\n${shown.join('\n')}${more > 0 ? `\n(and ${more} more in the version's details)` : ''}`;
}

import { AUTO_UPDATE_CAP_MAX, type UpdatesOverview } from '@sideport/contracts';

/** The cap as typed in the form: a whole number the server takes, or the sentence saying why not. */
export function parseCap(text: string): { cap: number } | { error: string } {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) return { error: 'Give a whole number of automatic updates a day (0: none).' };
  const cap = Number(trimmed);
  if (cap > AUTO_UPDATE_CAP_MAX) return { error: `At most ${AUTO_UPDATE_CAP_MAX} a day.` };
  return { cap };
}

/** How much of today's cap automatic updates took, as the panel says it. */
export function capSentence(overview: Pick<UpdatesOverview, 'automatic_today' | 'automatic_daily_cap'>) {
  const { automatic_today: today, automatic_daily_cap: cap } = overview;
  if (cap === 0) return 'Automatic updates are off: the cap is 0.';
  const left = Math.max(0, cap - today);
  return `${today} of ${cap} automatic updates started today (UTC); ${left === 0 ? 'the rest wait for tomorrow' : `${left} more may start`}.`;
}

/** Where the cap in force comes from. */
export const capSource = (
  overview: Pick<UpdatesOverview, 'automatic_daily_cap_default' | 'automatic_daily_cap_is_set'>,
) =>
  overview.automatic_daily_cap_is_set
    ? `Set here; the configured default (AUTO_UPDATE_DAILY_CAP) is ${overview.automatic_daily_cap_default}.`
    : 'The configured default (AUTO_UPDATE_DAILY_CAP).';

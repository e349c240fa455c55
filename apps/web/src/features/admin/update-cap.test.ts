import { describe, expect, it } from 'vitest';
import { capSentence, capSource, parseCap } from './update-cap';

describe('the daily cap of automatic updates', () => {
  it('takes a whole number up to the most the server takes, and says why not otherwise', () => {
    expect(parseCap(' 25 ')).toEqual({ cap: 25 });
    expect(parseCap('0')).toEqual({ cap: 0 });
    expect(parseCap('100000')).toEqual({ cap: 100_000 });
    expect(parseCap('100001')).toEqual({ error: 'At most 100000 a day.' });
    for (const bad of ['', '-1', '2.5', 'ten'])
      expect(parseCap(bad)).toEqual({ error: 'Give a whole number of automatic updates a day (0: none).' });
  });

  it("says how much of today's cap was taken and where the cap comes from", () => {
    expect(capSentence({ automatic_today: 3, automatic_daily_cap: 200 })).toBe(
      '3 of 200 automatic updates started today (UTC); 197 more may start.',
    );
    expect(capSentence({ automatic_today: 5, automatic_daily_cap: 5 })).toBe(
      '5 of 5 automatic updates started today (UTC); the rest wait for tomorrow.',
    );
    expect(capSentence({ automatic_today: 2, automatic_daily_cap: 0 })).toBe(
      'Automatic updates are off: the cap is 0.',
    );
    expect(capSource({ automatic_daily_cap_default: 200, automatic_daily_cap_is_set: true })).toBe(
      'Set here; the configured default (AUTO_UPDATE_DAILY_CAP) is 200.',
    );
    expect(capSource({ automatic_daily_cap_default: 200, automatic_daily_cap_is_set: false })).toBe(
      'The configured default (AUTO_UPDATE_DAILY_CAP).',
    );
  });
});

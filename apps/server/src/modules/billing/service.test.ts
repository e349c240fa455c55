import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, databaseKinds, signedInUser, type TestApp } from '../../test/harness.js';
import { addMonthsUtc } from './dev-checkout.js';
import { mergeSubscription, type SubscriptionState } from './service.js';

describe('mergeSubscription', () => {
  const observation = fc.record({
    plan: fc.constantFrom(0, 1, 3, 4),
    status: fc.constantFrom(
      'active',
      'trialing',
      'past_due',
      'unpaid',
      'incomplete',
      'canceled',
      'incomplete_expired',
    ),
    at: fc.integer({ min: 0, max: 20 }).map((s) => new Date(1_700_000_000_000 + s * 1000)),
    periodEnd: fc.option(
      fc.integer({ min: 0, max: 50 }).map((d) => new Date(1_800_000_000_000 + d * 86_400_000)),
      { nil: undefined },
    ),
  });
  const fold = (list: Array<Parameters<typeof mergeSubscription>[1]>) =>
    list.reduce<SubscriptionState | undefined>((state, obs) => mergeSubscription(state, obs, 0), undefined);

  it('ends in the same state whatever the delivery order', () => {
    fc.assert(
      fc.property(
        fc
          .array(observation, { minLength: 1, maxLength: 7 })
          .chain((list) =>
            fc.tuple(
              fc.constant(list),
              fc.shuffledSubarray(list, { minLength: list.length, maxLength: list.length }),
            ),
          ),
        ([list, shuffled]) => {
          expect(fold(shuffled)).toEqual(fold(list));
        },
      ),
    );
  });

  it('keeps a canceled subscription canceled', () => {
    const at = new Date('2026-01-01T00:00:00Z');
    const canceled = mergeSubscription(undefined, { status: 'canceled', at, plan: 0 }, 0);
    const later = mergeSubscription(
      canceled,
      { status: 'active', at: new Date('2026-02-01T00:00:00Z'), plan: 0 },
      0,
    );
    expect(later.status).toBe('canceled');
  });
});

describe('addMonthsUtc', () => {
  it.each([
    ['2026-01-31T12:00:00.000Z', 1, '2026-02-28T12:00:00.000Z'],
    ['2024-01-31T00:00:00.000Z', 1, '2024-02-29T00:00:00.000Z'],
    ['2026-03-15T08:30:00.000Z', 1, '2026-04-15T08:30:00.000Z'],
    ['2026-12-31T23:59:59.000Z', 1, '2027-01-31T23:59:59.000Z'],
    ['2024-02-29T00:00:00.000Z', 12, '2025-02-28T00:00:00.000Z'],
  ])('%s + %i month(s) is %s', (from, months, to) => {
    expect(addMonthsUtc(new Date(from), months).toISOString()).toBe(to);
  });
});

describe.each(databaseKinds)('daily usage on %s', (kind) => {
  let t: TestApp;
  let now = new Date('2026-05-01T23:59:00Z');
  beforeAll(async () => {
    t = await createTestApp(kind, { clock: () => now });
  });
  afterAll(() => t.close());

  it('lets exactly the limit through when decrypts race', async () => {
    await signedInUser(t, 'racer');
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => t.services.billing.consumeDecrypt('racer')),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(7);
    expect(refused[0]!.reason).toMatchObject({ status: 429, message: 'Daily limit reached.' });
    expect(await t.services.billing.dailyUsage('racer')).toEqual({
      day: '2026-05-01',
      used: 3,
      limit: 3,
      remaining: 0,
    });
  });

  it('starts afresh on the next UTC day', async () => {
    await signedInUser(t, 'daybreak');
    for (let i = 0; i < 3; i++) await t.services.billing.consumeDecrypt('daybreak');
    await expect(t.services.billing.consumeDecrypt('daybreak')).rejects.toMatchObject({ status: 429 });
    const saved = now;
    try {
      now = new Date('2026-05-02T00:00:30Z');
      expect(await t.services.billing.consumeDecrypt('daybreak')).toEqual({ used: 1, limit: 3 });
    } finally {
      now = saved;
    }
  });
});

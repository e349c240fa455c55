import { describe, expect, it } from 'vitest';
import { entryFacts, formatMb } from './format';

describe('formatMb', () => {
  it('never shows a small file as 0, and drops trailing zeros', () => {
    expect([0.01, 0.03, 5.25, 50, 64.49, 100, 1234.4].map(formatMb)).toEqual([
      '0.01',
      '0.03',
      '5.25',
      '50',
      '64.5',
      '100',
      '1,234',
    ]);
  });
});

describe('entryFacts', () => {
  const listing = { size: 64.49, require: '7.0', store_size: null, store_require: null };
  it("shows the listing's size of an app not decrypted, with nothing to compare", () => {
    expect(entryFacts(listing)).toEqual({ size: '64.5 MB', isIpa: false, storeNote: null });
  });
  it("shows a Done version's IPA facts and says what the store lists where it differs", () => {
    expect(entryFacts({ size: 0.03, require: '11.2', store_size: 64.49, store_require: '7.0' })).toEqual({
      size: '0.03 MB',
      isIpa: true,
      storeNote: 'The store lists 64.5 MB and iOS 7.0.',
    });
    expect(entryFacts({ size: 50, require: '14.0', store_size: 50, store_require: '15.0' }).storeNote).toBe(
      'The store lists iOS 15.0.',
    );
    expect(
      entryFacts({ size: 50, require: '14.0', store_size: 50.01, store_require: '14.0' }).storeNote,
    ).toBeNull();
  });
});

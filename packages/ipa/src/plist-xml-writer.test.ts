import fc from 'fast-check';
import { build } from 'plist';
import { describe, expect, it } from 'vitest';
import { parsePlist, type PlistValue } from './plist.js';
import { writeXmlPlist } from './plist-xml-writer.js';

// Text XML can hold: no control characters but tab, newline and carriage return... which the
// parser normalises, so keep to printable text for the round trip.
const text = fc.string({ unit: fc.constantFrom(...'abcXYZ019 <>&"\'é漢-_.:/\\'.split('')), maxLength: 12 });
const value: fc.Arbitrary<PlistValue> = fc.letrec<{ value: PlistValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    text,
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.boolean(),
    fc.uint8Array({ maxLength: 40 }),
    fc
      .date({ min: new Date('1990-01-01'), max: new Date('2090-01-01'), noInvalidDate: true })
      .map((d) => new Date(Math.floor(d.getTime() / 1000) * 1000)),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(text, tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('writeXmlPlist', () => {
  it('writes what the plist package builds, byte for byte', () => {
    fc.assert(
      fc.property(value, (v) => {
        expect(writeXmlPlist(v)).toBe(build(v as Parameters<typeof build>[0]));
      }),
      { numRuns: 300 },
    );
  });

  it('reads back as the value it was given', () => {
    fc.assert(
      fc.property(fc.dictionary(text, value, { maxKeys: 5 }), (v) => {
        expect(parsePlist(Buffer.from(writeXmlPlist(v)))).toEqual(v);
      }),
      { numRuns: 200 },
    );
  });

  it('refuses a control character XML cannot hold: PLIST_INVALID', () => {
    expect(() => writeXmlPlist({ key: 'a\u0001b' })).toThrow(
      expect.objectContaining({ code: 'PLIST_INVALID' }),
    );
  });
});

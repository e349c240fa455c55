import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IpaError } from './errors.js';
import {
  buildBinaryPlist,
  buildXmlPlist,
  isBinaryPlist,
  parsePlist,
  parsePlistDict,
  type PlistObject,
} from './plist.js';

const info: PlistObject = {
  CFBundleIdentifier: 'com.example.demo',
  CFBundleExecutable: 'Demo',
  UIDeviceFamily: [1, 2],
  LSRequiresIPhoneOS: true,
  Nested: { key: 'value' },
};

// XML 1.0 cannot carry most control characters or lone surrogates, so keep strings printable.
const isXmlSafe = (text: string): boolean =>
  [...text].every((char) => {
    const code = char.codePointAt(0)!;
    return (code >= 0x20 || code === 0x09 || code === 0x0a) && (code < 0xd800 || code > 0xdfff);
  });

describe('plist', () => {
  it('reads back an XML plist it wrote', () => {
    expect(parsePlistDict(Buffer.from(buildXmlPlist(info)))).toEqual(info);
  });

  it('reads back a binary plist it wrote', () => {
    const bytes = buildBinaryPlist(info);
    expect(isBinaryPlist(bytes)).toBe(true);
    expect(parsePlistDict(bytes)).toEqual(info);
  });

  it('reads back any dictionary of strings, integers and booleans, in both formats', () => {
    const value = fc.dictionary(
      fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !k.includes('\0') && k !== '__proto__'),
      fc.oneof(
        fc.string({ maxLength: 20 }).filter(isXmlSafe),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.boolean(),
      ),
    );
    fc.assert(
      fc.property(value, (dict) => {
        expect(parsePlistDict(buildBinaryPlist(dict))).toEqual(dict);
        expect(parsePlistDict(Buffer.from(buildXmlPlist(dict)))).toEqual(dict);
      }),
    );
  });

  it('refuses bytes that are neither XML nor binary: PLIST_INVALID', () => {
    expect(() => parsePlist(Buffer.from([0xca, 0xfe, 0xba, 0xbe]), 'Info.plist')).toThrow(
      new IpaError(
        'PLIST_INVALID',
        'Expected Info.plist to be an XML or binary plist, found bytes 0xcafebabe.',
      ),
    );
  });

  it('refuses malformed XML: PLIST_INVALID', () => {
    const error = (() => {
      try {
        parsePlist(Buffer.from('<plist><dict><key>a</key>'), 'Info.plist');
      } catch (err) {
        return err;
      }
    })();
    expect(error).toBeInstanceOf(IpaError);
    expect((error as IpaError).code).toBe('PLIST_INVALID');
  });

  it('reads a UTF-16 XML plist with a byte order mark', () => {
    const xml = buildXmlPlist({ CFBundleName: 'Démo' });
    const bytes = Buffer.concat([
      Buffer.from([0xff, 0xfe]),
      Buffer.from(xml.replace('UTF-8', 'UTF-16'), 'utf16le'),
    ]);
    expect(parsePlistDict(bytes)).toEqual({ CFBundleName: 'Démo' });
  });

  it('refuses XML that is not valid UTF-8: PLIST_INVALID', () => {
    const bytes = Buffer.concat([
      Buffer.from('<plist><string>'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('</string></plist>'),
    ]);
    expect(() => parsePlist(bytes, 'Info.plist')).toThrow(
      new IpaError('PLIST_INVALID', 'Expected Info.plist to be text in UTF-8, found bytes that are not.'),
    );
  });

  it('refuses a root that is not a dictionary: PLIST_INVALID', () => {
    expect(() => parsePlistDict(buildBinaryPlist(['a']), 'Info.plist')).toThrow(
      'Expected Info.plist to hold a dictionary, found an array.',
    );
  });

  it('gives IpaError, never a crash, on random bytes after either magic', () => {
    const prefix = fc.constantFrom('bplist00', '<?xml version="1.0"?><plist>', '');
    fc.assert(
      fc.property(prefix, fc.uint8Array({ maxLength: 256 }), (head, tail) => {
        try {
          parsePlist(Buffer.concat([Buffer.from(head), Buffer.from(tail)]));
        } catch (err) {
          expect(err).toBeInstanceOf(IpaError);
        }
      }),
      { numRuns: 500 },
    );
  });
});

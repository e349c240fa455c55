import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { PlistObject } from '../plist.js';
import { encodeDerEntitlements } from './der-entitlements.js';
import { missingTools } from '../test-support/system-tools.js';

/** Outside CI a machine without these skips this file with one line saying so. */
const skip = missingTools('openssl');

/**
 * What Apple's codesign writes for each plist (`codesign --generate-entitlement-der`), as recorded
 * in apple-codesign's tests (apple-codesign/src/entitlements.rs): [APPLICATION 16] { INTEGER 1,
 * [CONTEXT 16] { SEQUENCE { UTF8String key, value } ... } }.
 */
const CODESIGN_OUTPUT: [string, PlistObject, number[]][] = [
  ['an empty dictionary', {}, [112, 5, 2, 1, 1, 176, 0]],
  ['false', { key: false }, [112, 15, 2, 1, 1, 176, 10, 48, 8, 12, 3, 107, 101, 121, 1, 1, 0]],
  ['true', { key: true }, [112, 15, 2, 1, 1, 176, 10, 48, 8, 12, 3, 107, 101, 121, 1, 1, 255]],
  ['0', { key: 0 }, [112, 15, 2, 1, 1, 176, 10, 48, 8, 12, 3, 107, 101, 121, 2, 1, 0]],
  ['-1', { key: -1 }, [112, 15, 2, 1, 1, 176, 10, 48, 8, 12, 3, 107, 101, 121, 2, 1, 255]],
  ['42', { key: 42 }, [112, 15, 2, 1, 1, 176, 10, 48, 8, 12, 3, 107, 101, 121, 2, 1, 42]],
  ['an empty string', { key: '' }, [112, 14, 2, 1, 1, 176, 9, 48, 7, 12, 3, 107, 101, 121, 12, 0]],
  [
    'a string',
    { key: 'value' },
    [112, 19, 2, 1, 1, 176, 14, 48, 12, 12, 3, 107, 101, 121, 12, 5, 118, 97, 108, 117, 101],
  ],
  ['an empty array', { key: [] }, [112, 14, 2, 1, 1, 176, 9, 48, 7, 12, 3, 107, 101, 121, 48, 0]],
  [
    'a mixed array',
    { key: [true, 'foo'] },
    [112, 22, 2, 1, 1, 176, 17, 48, 15, 12, 3, 107, 101, 121, 48, 8, 1, 1, 255, 12, 3, 102, 111, 111],
  ],
  ['an empty inner dictionary', { key: {} }, [112, 14, 2, 1, 1, 176, 9, 48, 7, 12, 3, 107, 101, 121, 176, 0]],
  [
    'an inner dictionary',
    { key: { inner: false } },
    [
      112, 26, 2, 1, 1, 176, 21, 48, 19, 12, 3, 107, 101, 121, 176, 12, 48, 10, 12, 5, 105, 110, 110, 101,
      114, 1, 1, 0,
    ],
  ],
  // Keys in byte order whatever order the plist had them in.
  [
    'several keys',
    { key3: 42, key: false, key2: true },
    [
      112, 37, 2, 1, 1, 176, 32, 48, 8, 12, 3, 107, 101, 121, 1, 1, 0, 48, 9, 12, 4, 107, 101, 121, 50, 1, 1,
      255, 48, 9, 12, 4, 107, 101, 121, 51, 2, 1, 42,
    ],
  ],
];

describe.skipIf(skip)('encodeDerEntitlements', () => {
  it.each(CODESIGN_OUTPUT)('encodes %s byte for byte as codesign does', (_name, plist, expected) => {
    expect([...encodeDerEntitlements(plist)]).toEqual(expected);
  });

  it('encodes real entitlements, long lengths included, so that openssl parses every element', () => {
    const entitlements: PlistObject = {
      'application-identifier': 'TEAM123456.com.example.app',
      'com.apple.developer.team-identifier': 'TEAM123456',
      'get-task-allow': true,
      'keychain-access-groups': Array.from({ length: 12 }, (_, i) => `TEAM123456.com.example.group${i}`),
      'com.apple.developer.associated-domains': ['applinks:example.com'],
      'aps-environment': 'development',
      'com.apple.developer.icloud-container-environment': 'Development',
      count: 128,
    };
    const der = encodeDerEntitlements(entitlements);
    expect(der.length).toBeGreaterThan(256);
    const parsed = execFileSync('openssl', ['asn1parse', '-inform', 'DER'], { input: der, encoding: 'utf8' });
    expect(parsed).toMatch(/^ +0:d=0 +hl=4 l= *\d+ cons: appl \[ 16 \]/);
    expect(parsed).toContain('cons: cont [ 16 ]');
    expect(parsed).toContain('UTF8STRING        :TEAM123456.com.example.group11');
    expect(parsed).toMatch(/INTEGER +:80/);
    expect(parsed).not.toContain('error');
  });

  it('refuses values codesign cannot encode either: ENTITLEMENTS_INVALID', () => {
    expect(() => encodeDerEntitlements({ key: 1.5 })).toThrow(
      expect.objectContaining({ code: 'ENTITLEMENTS_INVALID' }),
    );
    expect(() => encodeDerEntitlements({ key: new Date(0) })).toThrow(
      expect.objectContaining({ code: 'ENTITLEMENTS_INVALID' }),
    );
    expect(() => encodeDerEntitlements({ key: Buffer.from('x') })).toThrow(
      expect.objectContaining({ code: 'ENTITLEMENTS_INVALID' }),
    );
  });
});

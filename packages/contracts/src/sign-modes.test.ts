import { describe, expect, it } from 'vitest';
import { appEntry } from './catalog.js';
import { signRequest } from './sign.js';
import { NO_SIGN_STATUSES, SIGN_MODES, SIGN_TYPES, signModeOf } from './sign-modes.js';

describe('the sign modes table', () => {
  it('gives each mode its number, status field, the dylib kinds it injects and whether it renames', () => {
    expect(SIGN_MODES.map((m) => [m.type, m.statusField, m.injects, m.renamesBundleIds])).toEqual([
      [0, 'normal_sign', [], false],
      [1, 'iap_sign', ['iap'], false],
      [2, 'igg_sign', ['igg'], false],
      [3, 'both_sign', ['iap', 'igg'], false],
      [4, 'dup_sign', [], true],
    ]);
    expect(SIGN_TYPES.map((type) => signModeOf(type).type)).toEqual([0, 1, 2, 3, 4]);
  });

  it('refuses another type in the sentence that names every mode', () => {
    const refused = signRequest.safeParse({ type: 5 });
    expect(refused.error?.issues[0]?.message).toBe(
      'type must be 0 normal, 1 IAP, 2 IGG, 3 IAP+IGG or 4 DUP.',
    );
    expect(signRequest.safeParse({ type: 3 }).data).toEqual({ type: 3 });
  });

  it('puts one status field per mode in the version entry, after its decrypt status', () => {
    const fields = Object.keys(appEntry.shape);
    const at = fields.indexOf('status');
    expect(fields.slice(at, at + 6)).toEqual([
      'status',
      'normal_sign',
      'iap_sign',
      'igg_sign',
      'both_sign',
      'dup_sign',
    ]);
    expect(NO_SIGN_STATUSES).toEqual({
      normal_sign: 'No',
      iap_sign: 'No',
      igg_sign: 'No',
      both_sign: 'No',
      dup_sign: 'No',
    });
  });
});

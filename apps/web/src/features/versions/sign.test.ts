import { describe, expect, it } from 'vitest';
import { SIGN_MODES, signQuestion } from './sign';

describe('signQuestion', () => {
  it("is 'Really want request sign', the mode in parentheses and the app name (docs/product.md, Validation and confirmations)", () => {
    expect(SIGN_MODES.map((mode) => signQuestion(mode, 'Ready App'))).toEqual([
      'Really want request sign Ready App',
      'Really want request sign (IAP) Ready App',
      'Really want request sign (IGG) Ready App',
      'Really want request sign (IAP + IGG) Ready App',
      'Really want request sign (DUP) Ready App',
    ]);
  });
});

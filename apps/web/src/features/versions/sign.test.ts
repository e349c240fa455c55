import { describe, expect, it } from 'vitest';
import { confirmationAddendum } from './capabilities';
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

describe('confirmationAddendum', () => {
  const outcome = (id: string, status: 'lost' | 'changed' | 'kept', sentence: string | null) => ({
    id,
    name: id,
    status,
    sentence,
    operator: null,
  });
  const entry = {
    capabilities: {
      team_id: 'TEAM123456',
      modes: [
        {
          sign_types: [0, 1, 2, 3] as (0 | 1 | 2 | 3 | 4)[],
          summary: 'Loses push notifications and app groups.',
          lost: 2,
          changed: 0,
          bundle_id: 'com.example.app',
          components: [
            {
              path: '',
              kind: 'app',
              name: 'App',
              bundle_id: 'com.example.app',
              signed_as: 'com.example.app',
              outcome: 'signed' as const,
              note: null,
              capabilities: [
                outcome('push', 'lost', 'Push notifications will not arrive.'),
                outcome('keychain', 'kept', null),
              ],
            },
            {
              path: 'PlugIns/Share.appex',
              kind: 'app-extension',
              name: 'Share',
              bundle_id: 'com.example.app.share',
              signed_as: 'com.example.app.share',
              outcome: 'signed' as const,
              note: null,
              capabilities: [
                outcome('app-groups', 'lost', "The share extension cannot reach the app's data."),
              ],
            },
          ],
        },
        {
          sign_types: [4] as (0 | 1 | 2 | 3 | 4)[],
          summary: 'Keeps all its capabilities.',
          lost: 0,
          changed: 0,
          bundle_id: 'com.example.app.dup1',
          components: [],
        },
      ],
    },
  };

  it("adds the mode's summary and each sentence of what is lost after the question", () => {
    expect(signQuestion(SIGN_MODES[0]!, 'App') + confirmationAddendum(entry, 0)).toBe(
      'Really want request sign App\n\nLoses push notifications and app groups.\n' +
        "- Push notifications will not arrive.\n- The share extension cannot reach the app's data.",
    );
  });

  it('adds nothing where everything is kept, or before the report is read', () => {
    expect(confirmationAddendum(entry, 4)).toBe('');
    expect(confirmationAddendum({ capabilities: null }, 0)).toBe('');
    expect(confirmationAddendum({}, 0)).toBe('');
  });
});

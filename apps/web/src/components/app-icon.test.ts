import { describe, expect, it } from 'vitest';
import { initialsOf } from './app-icon';

describe('initialsOf', () => {
  it('takes the first letters of the first two words, or of a single word, in any script', () => {
    expect(initialsOf('Talon for Twitter')).toBe('TF');
    expect(initialsOf('Facebook')).toBe('FA');
    expect(initialsOf('카카오톡 KakaoTalk')).toBe('카K');
    expect(initialsOf('AC/DC Live 🎸')).toBe('AD');
    expect(initialsOf('')).toBe('?');
  });
});

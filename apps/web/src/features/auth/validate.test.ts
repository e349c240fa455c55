import { describe, expect, it } from 'vitest';
import { validateAuthForm } from './validate';

describe('validateAuthForm', () => {
  it('asks for 4 characters of id first, then 8 of password', () => {
    expect(validateAuthForm('sign-in', 'abc', 'short', '')).toBe('Please enter at least 4 characters for ID');
    expect(validateAuthForm('sign-in', 'abcd', '1234567', '')).toBe(
      'Please enter at least 8 characters for Password',
    );
    expect(validateAuthForm('sign-in', 'abcd', '12345678', '')).toBeNull();
  });

  it('checks the confirmation on sign-up only', () => {
    expect(validateAuthForm('sign-up', 'abcd', '12345678', '12345679')).toBe('Passwords do not match.');
    expect(validateAuthForm('sign-up', 'abcd', '12345678', '12345678')).toBeNull();
    expect(validateAuthForm('sign-in', 'abcd', '12345678', 'anything')).toBeNull();
  });
});

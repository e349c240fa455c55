import { ID_MIN_LENGTH, PASSWORD_MIN_LENGTH } from '@sideport/contracts';

export type AuthMode = 'sign-in' | 'sign-up';

export const ID_RULE = 'Please enter at least 4 characters for ID';
export const PASSWORD_RULE = 'Please enter at least 8 characters for Password';
export const CONFIRM_RULE = 'Passwords do not match.';

/**
 * docs/product.md, Validation and confirmations, checked before anything is sent; the first broken
 * rule is said (inline on sign-up, alerted on sign-in).
 */
export function validateAuthForm(
  mode: AuthMode,
  id: string,
  password: string,
  confirm: string,
): string | null {
  if (id.length < ID_MIN_LENGTH) return ID_RULE;
  if (password.length < PASSWORD_MIN_LENGTH) return PASSWORD_RULE;
  if (mode === 'sign-up' && password !== confirm) return CONFIRM_RULE;
  return null;
}

import { ID_MIN_LENGTH, PASSWORD_MIN_LENGTH } from '@sideport/contracts';

export type AuthMode = 'sign-in' | 'sign-up';

/** docs/product.md, Validation and confirmations, checked before anything is sent; the first broken rule is alerted. */
export function validateAuthForm(
  mode: AuthMode,
  id: string,
  password: string,
  confirm: string,
): string | null {
  if (id.length < ID_MIN_LENGTH) return 'Please enter at least 4 characters for ID';
  if (password.length < PASSWORD_MIN_LENGTH) return 'Please enter at least 8 characters for Password';
  if (mode === 'sign-up' && password !== confirm) return 'Passwords do not match.';
  return null;
}

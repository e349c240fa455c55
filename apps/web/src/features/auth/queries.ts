import { gradeAnswer, noContent, type Credentials } from '@sideport/contracts';
import { api } from '../../lib/api';
import type { AuthMode } from './validate';

/** POST /api/sign-in or /api/sign-up: the session cookie and the grade (a 401 is the form's sentence). */
export const signInOrUp = (mode: AuthMode, credentials: Credentials) =>
  api(`/api/${mode}`, gradeAnswer, { method: 'POST', body: credentials, isAuthAttempt: true });

/** POST /api/sign-out: the session ends on the server, its event streams with it. */
export const signOut = () => api('/api/sign-out', noContent, { method: 'POST' });

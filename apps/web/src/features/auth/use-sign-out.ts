import { useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { ApiError, RETRY_LATER } from '../../lib/api';
import { useClientStore } from '../../lib/store';
import { signOut } from './queries';

/** Sign out after 'Really want sign out?'; a failure alerts 'Please retry later.' (docs/product.md, Errors). */
export function useSignOut() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  return async () => {
    if (!window.confirm('Really want sign out?')) return;
    try {
      await signOut();
    } catch (error) {
      // A 401 already signed the client out and went to /sign-in: nothing left to retry.
      if (!(error instanceof ApiError && error.isHandled)) window.alert(RETRY_LATER);
      return;
    }
    // Leave signed-in-only pages first, so they do not send the person to sign in again.
    void navigate('/latest');
    useClientStore.getState().signedOut();
    queryClient.clear();
  };
}

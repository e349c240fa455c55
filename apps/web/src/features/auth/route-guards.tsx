import { useEffect, type ReactNode } from 'react';
import { Navigate, useLocation } from 'react-router';
import { afterSignInPath, useClientStore } from '../../lib/store';

/** /sign-in and /sign-up are for signed-out people only; a signed-in one goes where sign-in leads. */
export function SignedOutOnly({ children }: { children: ReactNode }) {
  const isLogin = useClientStore((s) => s.isLogin);
  const lastPage = useClientStore((s) => s.last_page);
  return isLogin ? <Navigate to={afterSignInPath(lastPage)} replace /> : children;
}

/** Pages for signed-in people; others are sent to sign in and brought back after. */
export function SignedInOnly({ children }: { children: ReactNode }) {
  const isLogin = useClientStore((s) => s.isLogin);
  const location = useLocation();
  const setLastPage = useClientStore((s) => s.setLastPage);
  useEffect(() => {
    if (!isLogin) setLastPage(`${location.pathname}${location.search}`);
  }, [isLogin, location.pathname, location.search, setLastPage]);
  return isLogin ? children : <Navigate to="/sign-in" replace />;
}

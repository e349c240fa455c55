import { useEffect, useState, type ReactNode } from 'react';
import { Navigate, useLocation } from 'react-router';
import { useClientStore } from '../../lib/store';

/**
 * /sign-in and /sign-up are for signed-out people only: arriving signed in goes to /. Signing in on
 * the page renders nothing here while the form itself goes to last_page.
 */
export function SignedOutOnly({ children }: { children: ReactNode }) {
  const isLogin = useClientStore((s) => s.isLogin);
  const [wasSignedInOnArrival] = useState(isLogin);
  if (!isLogin) return children;
  return wasSignedInOnArrival ? <Navigate to="/" replace /> : null;
}

/**
 * Pages for signed-in people; others are sent to sign in and brought back after. Someone signed out
 * while on the page is taken away by what signed them out (sign-out goes to /latest with last_page
 * reset, a 401 stores this path itself), so this page neither stores it nor redirects then.
 */
export function SignedInOnly({ children }: { children: ReactNode }) {
  const isLogin = useClientStore((s) => s.isLogin);
  const [wasSignedInOnArrival] = useState(isLogin);
  const location = useLocation();
  const setLastPage = useClientStore((s) => s.setLastPage);
  const isArrivingSignedOut = !isLogin && !wasSignedInOnArrival;
  useEffect(() => {
    if (isArrivingSignedOut) setLastPage(`${location.pathname}${location.search}`);
  }, [isArrivingSignedOut, location.pathname, location.search, setLastPage]);
  if (isLogin) return children;
  return isArrivingSignedOut ? <Navigate to="/sign-in" replace /> : null;
}

/** The admin console: signed in with a grade above 0; the server checks every call anyway. */
export function AdminOnly({ children }: { children: ReactNode }) {
  const isAdmin = useClientStore((s) => s.grade > 0);
  return (
    <SignedInOnly>
      {isAdmin ? (
        children
      ) : (
        <section className="text-center my-5" aria-labelledby="admin-title">
          <h1 id="admin-title" className="fs-4">
            Admin
          </h1>
          <p className="text-body-secondary">Do not have permission.</p>
        </section>
      )}
    </SignedInOnly>
  );
}

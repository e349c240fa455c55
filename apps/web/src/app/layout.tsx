import { lazy, Suspense } from 'react';
import { Outlet } from 'react-router';
import { AppNavbar } from '../components/navbar';
import { useClientStore } from '../lib/store';

// Only a signed-in tab listens to live events (the stream needs a session): the code comes with it.
const LiveEvents = lazy(() =>
  import('../features/live/live-events').then((m) => ({ default: m.LiveEvents })),
);

export function Layout() {
  const isLogin = useClientStore((s) => s.isLogin);
  return (
    <>
      <AppNavbar />
      <main className="container pb-5">
        <Outlet />
      </main>
      {isLogin && (
        <Suspense fallback={null}>
          <LiveEvents />
        </Suspense>
      )}
    </>
  );
}

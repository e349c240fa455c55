import Container from 'react-bootstrap/Container';
import { createBrowserRouter, Link, Outlet } from 'react-router';
import { AppNavbar } from '../components/navbar';
import { AuthForm } from '../features/auth/auth-form';
import { AdminOnly, SignedInOnly, SignedOutOnly } from '../features/auth/route-guards';
import { AdminPage } from '../features/admin/admin-page';
import { SetupPage } from '../features/admin/setup-page';
import { useLiveEvents } from '../features/live/use-live-events';
import { MyPage } from '../features/account/my-page';
import { ListPage } from '../features/catalog/list-page';
import { SearchPage } from '../features/catalog/search-page';
import { UdidPage } from '../features/account/udid-page';
import { setNavigate } from '../lib/navigation';

function Layout() {
  useLiveEvents();
  return (
    <>
      <AppNavbar />
      <Container as="main" className="pb-5">
        <Outlet />
      </Container>
    </>
  );
}

function NotFound() {
  return (
    <section className="text-center my-5">
      <h1 className="fs-4">This page does not exist.</h1>
      <Link to="/latest">Go to the latest list</Link>
    </section>
  );
}

/** Routes of docs/product.md, Screens; the root path is treated as latest. */
export const router = createBrowserRouter([
  {
    element: <Layout />,
    children: [
      { path: '/', element: <ListPage key="latest" list="latest" /> },
      { path: '/latest', element: <ListPage key="latest" list="latest" /> },
      { path: '/queue', element: <ListPage key="queue" list="queue" /> },
      { path: '/search/:country/*', element: <SearchPage /> },
      {
        path: '/sign-in',
        element: (
          <SignedOutOnly key="sign-in">
            <AuthForm mode="sign-in" />
          </SignedOutOnly>
        ),
      },
      {
        path: '/sign-up',
        element: (
          <SignedOutOnly key="sign-up">
            <AuthForm mode="sign-up" />
          </SignedOutOnly>
        ),
      },
      {
        path: '/my',
        element: (
          <SignedInOnly>
            <MyPage />
          </SignedInOnly>
        ),
      },
      {
        path: '/udid',
        element: (
          <SignedInOnly>
            <UdidPage />
          </SignedInOnly>
        ),
      },
      {
        path: '/admin',
        element: (
          <AdminOnly>
            <AdminPage />
          </AdminOnly>
        ),
      },
      // The first admin's one-time link, printed by the server at its first start.
      { path: '/setup/:token', element: <SetupPage /> },
      { path: '*', element: <NotFound /> },
    ],
  },
]);

setNavigate((path) => void router.navigate(path));

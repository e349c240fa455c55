import { lazy, Suspense, useEffect, type ReactNode } from 'react';
import { Link, Route, Routes, useNavigate } from 'react-router';
import { SignedInOnly, SignedOutOnly, AdminOnly } from '../features/auth/route-guards';
import { ListPage } from '../features/catalog/list-page';
import { SearchPage } from '../features/catalog/search-page';
import { setNavigate } from '../lib/navigation';
import { usePageTitle } from '../lib/page-title';
import { Layout } from './layout';

// Pages beyond the lists load when first visited: the first screen (a list) needs none of them.
const AuthForm = lazy(() => import('../features/auth/auth-form').then((m) => ({ default: m.AuthForm })));
const MyPage = lazy(() => import('../features/account/my-page').then((m) => ({ default: m.MyPage })));
const UdidPage = lazy(() => import('../features/account/udid-page').then((m) => ({ default: m.UdidPage })));
const InstallPage = lazy(() =>
  import('../features/account/install-page').then((m) => ({ default: m.InstallPage })),
);
const AdminPage = lazy(() => import('../features/admin/admin-page').then((m) => ({ default: m.AdminPage })));
const SetupPage = lazy(() => import('../features/admin/setup-page').then((m) => ({ default: m.SetupPage })));

function PageLoading() {
  return (
    <div className="text-center my-5">
      <div className="spinner-border" role="status" aria-label="Loading" />
    </div>
  );
}

const later = (page: ReactNode) => <Suspense fallback={<PageLoading />}>{page}</Suspense>;

function NotFound() {
  usePageTitle('Not found');
  return (
    <section className="text-center my-5">
      <h1 className="fs-4">This page does not exist.</h1>
      <Link to="/latest">Go to the latest list</Link>
    </section>
  );
}

/** Gives code outside components (the API client's 401 handling) the router's navigate. */
function NavigateBridge() {
  const navigate = useNavigate();
  useEffect(() => setNavigate((path) => void navigate(path)), [navigate]);
  return null;
}

/** Routes of docs/product.md, Screens; the root path is treated as latest. */
export function AppRoutes() {
  return (
    <>
      <NavigateBridge />
      <Routes>
        <Route element={<Layout />}>
          <Route path="/" element={<ListPage key="latest" list="latest" />} />
          <Route path="/latest" element={<ListPage key="latest" list="latest" />} />
          <Route path="/queue" element={<ListPage key="queue" list="queue" />} />
          <Route path="/search/:country/*" element={<SearchPage />} />
          <Route
            path="/sign-in"
            element={<SignedOutOnly key="sign-in">{later(<AuthForm mode="sign-in" />)}</SignedOutOnly>}
          />
          <Route
            path="/sign-up"
            element={<SignedOutOnly key="sign-up">{later(<AuthForm mode="sign-up" />)}</SignedOutOnly>}
          />
          <Route path="/my" element={<SignedInOnly>{later(<MyPage />)}</SignedInOnly>} />
          <Route path="/udid" element={<SignedInOnly>{later(<UdidPage />)}</SignedInOnly>} />
          <Route path="/install" element={later(<InstallPage />)} />
          <Route path="/admin" element={<AdminOnly>{later(<AdminPage />)}</AdminOnly>} />
          {/* Each console tab has its own address, so it can be linked and reached with Back. */}
          <Route path="/admin/:tab" element={<AdminOnly>{later(<AdminPage />)}</AdminOnly>} />
          {/* The first admin's one-time link, printed by the server at its first start. */}
          <Route path="/setup/:token" element={later(<SetupPage />)} />
          <Route path="*" element={<NotFound />} />
        </Route>
      </Routes>
    </>
  );
}

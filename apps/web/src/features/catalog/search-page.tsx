import { useEffect, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { ListState } from '../../components/list-state';
import { SkeletonCards } from '../../components/skeleton-cards';
import { ApiError, requireSignIn, RETRY_LATER } from '../../lib/api';
import { usePageTitle } from '../../lib/page-title';
import { useClientStore } from '../../lib/store';
import { AppGrid } from './app-grid';
import { searchQuery } from './queries';

/**
 * /search/{country}/{keyword*}: the keyword may contain slashes. Signed-in only on the server. A
 * search error (a bad country, a keyword too long) is said once, inline with a retry, never in an
 * alert too; without a keyword the page says what to do; a long heading wraps.
 */
export function SearchPage() {
  const params = useParams();
  const country = (params.country ?? 'KR').toUpperCase();
  const keyword = params['*'] ?? '';
  usePageTitle(keyword ? `Search: ${keyword}` : 'Search');
  const isLogin = useClientStore((s) => s.isLogin);
  // Only a visitor arriving signed out is asked to sign in: signing out here goes to /latest on its
  // own (use-sign-out), and a 401 to /sign-in, so this page must not alert 'Please Sign-in' then.
  const [wasSignedInOnArrival] = useState(isLogin);
  const query = useQuery({ ...searchQuery(country, keyword), enabled: isLogin && keyword.length > 0 });
  // Searching needs an account: a visitor is asked to sign in and brought back to this search.
  useEffect(() => {
    if (!isLogin && !wasSignedInOnArrival) requireSignIn();
  }, [isLogin, wasSignedInOnArrival]);
  const failure = query.error instanceof ApiError && query.error.message ? query.error.message : RETRY_LATER;
  const retry = () => void query.refetch();

  return (
    <section aria-labelledby="search-title">
      <h1 id="search-title" className="fs-4 mb-3 text-break">
        {keyword ? `Search: ${keyword}` : 'Search'}
      </h1>
      {!keyword && <p data-testid="search-empty">Type the name of an app in the search box.</p>}
      {/* Only an answer can say '{keyword} not found.': a failed search says why, with a retry. */}
      {query.data ? (
        query.data.length === 0 ? (
          <ListState
            kind="empty"
            text={`${keyword} not found.`}
            onRetry={retry}
            isRetrying={query.isFetching}
          />
        ) : (
          <AppGrid entries={query.data} list="search" />
        )
      ) : query.isError ? (
        !(query.error instanceof ApiError && query.error.isHandled) && (
          <ListState kind="failed" text={failure} onRetry={retry} isRetrying={query.isFetching} />
        )
      ) : (
        query.isFetching && <SkeletonCards />
      )}
    </section>
  );
}

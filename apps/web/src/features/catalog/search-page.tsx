import { useEffect } from 'react';
import Spinner from 'react-bootstrap/Spinner';
import { useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { alertFailure, requireSignIn } from '../../lib/api';
import { useClientStore } from '../../lib/store';
import { AppGrid } from './app-grid';
import { searchQuery } from './queries';

/** /search/{country}/{keyword*}: the keyword may contain slashes. Signed-in only on the server. */
export function SearchPage() {
  const params = useParams();
  const country = (params.country ?? 'KR').toUpperCase();
  const keyword = params['*'] ?? '';
  const isLogin = useClientStore((s) => s.isLogin);
  const query = useQuery({ ...searchQuery(country, keyword), enabled: isLogin && keyword.length > 0 });
  useEffect(() => {
    if (query.error) alertFailure(query.error);
  }, [query.error]);
  // Searching needs an account: a visitor is asked to sign in and brought back to this search.
  useEffect(() => {
    if (!isLogin) requireSignIn();
  }, [isLogin]);

  return (
    <section aria-labelledby="search-title">
      <h1 id="search-title" className="fs-4 mb-3">
        Search: {keyword}
      </h1>
      {/* Only an answer can say '{keyword} not found.': a failed search shows its alert alone. */}
      {query.data ? (
        <AppGrid entries={query.data} list="search" emptyText={`${keyword} not found.`} />
      ) : (
        query.isFetching && (
          <div className="text-center my-5">
            <Spinner animation="border" role="status" aria-label="Loading" />
          </div>
        )
      )}
    </section>
  );
}

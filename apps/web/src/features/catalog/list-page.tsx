import { useEffect, useRef } from 'react';
import Spinner from 'react-bootstrap/Spinner';
import { useInfiniteQuery } from '@tanstack/react-query';
import { alertFailure, RETRY_LATER } from '../../lib/api';
import { AppGrid } from './app-grid';
import { listQuery, type PagedList } from './queries';
import { useInfiniteScroll } from './use-infinite-scroll';

const TITLES: Record<PagedList, string> = { latest: 'Latest decrypted', queue: 'Decrypt Queue' };

/** 'Latest decrypted' (/ and /latest) and 'Decrypt Queue' (/queue), with infinite scroll. */
export function ListPage({ list }: { list: PagedList }) {
  const query = useInfiniteQuery(listQuery(list));
  const end = useRef<HTMLDivElement>(null);
  const entries = query.data?.pages.flatMap((p) => p.entries) ?? [];
  // A failed load alerts once and stops the scroll (docs/product.md, Errors).
  const failed = query.isError;
  useEffect(() => {
    if (failed) alertFailure(new Error(RETRY_LATER));
  }, [failed]);
  const canLoad = query.hasNextPage && !query.isFetching && !failed && query.isSuccess;
  useInfiniteScroll(end, () => void query.fetchNextPage(), canLoad);

  return (
    <section aria-labelledby="list-title">
      <h1 id="list-title" className="fs-4 mb-3">
        {TITLES[list]}
      </h1>
      {query.isPending ? (
        <div className="text-center my-5">
          <Spinner animation="border" role="status" aria-label="Loading" />
        </div>
      ) : (
        <AppGrid entries={entries} list={list} emptyText="No list now." />
      )}
      <div ref={end} data-testid="list-end" />
      {query.isFetchingNextPage && (
        <div className="text-center my-3">
          <Spinner animation="border" size="sm" role="status" aria-label="Loading more" />
        </div>
      )}
    </section>
  );
}

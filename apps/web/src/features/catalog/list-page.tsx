import { useEffect, useRef } from 'react';
import { useInfiniteQuery } from '@tanstack/react-query';
import { ListState } from '../../components/list-state';
import { SkeletonCards } from '../../components/skeleton-cards';
import { alertFailure, ApiError, RETRY_LATER } from '../../lib/api';
import { useClientStore } from '../../lib/store';
import { usePageTitle } from '../../lib/page-title';
import { AppGrid } from './app-grid';
import type { PagedList } from '../../entries/query-keys';
import { listQuery } from './queries';
import { QueueNotice } from './queue-notice';
import { useInfiniteScroll } from './use-infinite-scroll';

const TITLES: Record<PagedList, string> = { latest: 'Latest decrypted', queue: 'Decrypt Queue' };

/** 'Latest decrypted' (/ and /latest) and 'Decrypt Queue' (/queue), with infinite scroll. */
export function ListPage({ list }: { list: PagedList }) {
  usePageTitle(TITLES[list]);
  const country = useClientStore((s) => s.country);
  const query = useInfiniteQuery(listQuery(list, country));
  const end = useRef<HTMLDivElement>(null);
  const entries = query.data?.pages.flatMap((p) => p.entries) ?? [];
  // A failed load alerts once and stops the scroll (docs/product.md, Errors).
  const failed = query.isError;
  useEffect(() => {
    if (failed) alertFailure(new Error(RETRY_LATER));
  }, [failed]);
  const canLoad = query.hasNextPage && !query.isFetching && !failed && query.isSuccess;
  useInfiniteScroll(end, () => void query.fetchNextPage(), canLoad);
  const retry = () => void (query.data ? query.fetchNextPage() : query.refetch());
  const failure = query.error instanceof ApiError && query.error.message ? query.error.message : RETRY_LATER;

  return (
    <section aria-labelledby="list-title">
      <h1 id="list-title" className="fs-4 mb-3">
        {TITLES[list]}
      </h1>
      {list === 'queue' && <QueueNotice />}
      {query.isPending ? (
        <SkeletonCards />
      ) : query.isError && entries.length === 0 ? (
        <ListState kind="failed" text={failure} onRetry={retry} isRetrying={query.isFetching} />
      ) : entries.length === 0 ? (
        <ListState kind="empty" text="No list now." onRetry={retry} isRetrying={query.isFetching} />
      ) : (
        <AppGrid entries={entries} list={list} />
      )}
      <div ref={end} data-testid="list-end" />
      {query.isFetchingNextPage && (
        <div className="text-center my-3">
          <div className="spinner-border spinner-border-sm" role="status" aria-label="Loading more" />
        </div>
      )}
      {query.isError && entries.length > 0 && (
        <div className="text-center my-3">
          <button type="button" className="btn btn-outline-primary btn-sm" onClick={retry}>
            Load more
          </button>
        </div>
      )}
    </section>
  );
}

import { useEffect } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { liveEvent } from '@sideport/contracts';
import { useClientStore } from '../../lib/store';
import { applyLiveEvent, reconcileWithLedger, refreshAfterGap } from '../../entries/apply-event';

/**
 * One Server-Sent Events stream per signed-in tab (docs/architecture.md, Web client): every status change the
 * server publishes updates the cached lists, search results, version modal and admin queue, so
 * nobody reloads to see 'Enqueued...' become Download. EventSource reconnects by itself. Whenever
 * the stream opens (the first time too: the page's lists were asked before it) the shown data is
 * refetched, as events may have been missed meanwhile; every answer that lands is brought up to
 * the events heard while it was on its way (reconcileWithLedger).
 */
export function useLiveEvents() {
  const isLogin = useClientStore((s) => s.isLogin);
  const queryClient = useQueryClient();

  useEffect(() => {
    if (!isLogin || typeof EventSource === 'undefined') return;
    const source = new EventSource('/api/events', { withCredentials: true });
    source.onmessage = (message: MessageEvent<string>) => {
      let data: unknown;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      const parsed = liveEvent.safeParse(data);
      if (parsed.success) applyLiveEvent(queryClient, parsed.data);
    };
    source.onopen = () => refreshAfterGap(queryClient);
    const stopReconciling = queryClient.getQueryCache().subscribe((event) => {
      if (event.type === 'updated' && event.action.type === 'success' && !event.action.manual)
        reconcileWithLedger(queryClient, event.query.queryKey);
    });
    return () => {
      stopReconciling();
      source.close();
    };
  }, [isLogin, queryClient]);
}

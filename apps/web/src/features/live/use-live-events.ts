import { useEffect } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { liveEvent } from '@sideport/contracts';
import { useClientStore } from '../../lib/store';
import { applyLiveEvent, refreshAfterGap } from './apply-event';

/**
 * One Server-Sent Events stream per signed-in tab (docs/architecture.md, Web client): every status change the
 * server publishes updates the cached lists, search results, version modal and admin queue, so
 * nobody reloads to see 'Enqueued...' become Download. EventSource reconnects by itself; after a
 * gap the shown data is refetched, as events may have been missed meanwhile.
 */
export function useLiveEvents() {
  const isLogin = useClientStore((s) => s.isLogin);
  const queryClient = useQueryClient();

  useEffect(() => {
    if (!isLogin || typeof EventSource === 'undefined') return;
    const source = new EventSource('/api/events', { withCredentials: true });
    let dropped = false;
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
    source.onerror = () => {
      dropped = true;
    };
    source.onopen = () => {
      if (dropped) refreshAfterGap(queryClient);
      dropped = false;
    };
    return () => source.close();
  }, [isLogin, queryClient]);
}

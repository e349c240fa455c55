import { useEffect } from 'react';

/** The tab's title for this page: 'Decrypt Queue · Sideport'; the app's name alone without one. */
export function usePageTitle(title: string | undefined) {
  useEffect(() => {
    document.title = title ? `${title} · Sideport` : 'Sideport';
  }, [title]);
}

import { useEffect, useRef, type RefObject } from 'react';

/** docs/product.md, Constants: the next page loads 250 px from the end of the list; scrolling is throttled at 300 ms. */
export const SCROLL_TRIGGER_PX = 250;
export const SCROLL_THROTTLE_MS = 300;

/**
 * Calls onNearEnd when the bottom of `target` comes within 250 px of the viewport's bottom,
 * checking at most every 300 ms while the page scrolls (a trailing check catches the last move).
 */
export function useInfiniteScroll(
  target: RefObject<HTMLElement | null>,
  onNearEnd: () => void,
  enabled: boolean,
) {
  const callback = useRef(onNearEnd);
  callback.current = onNearEnd;

  useEffect(() => {
    if (!enabled) return;
    let lastCheck = 0;
    let trailing: ReturnType<typeof setTimeout> | undefined;
    const check = () => {
      lastCheck = Date.now();
      const el = target.current;
      if (el && el.getBoundingClientRect().bottom - window.innerHeight <= SCROLL_TRIGGER_PX)
        callback.current();
    };
    const onScroll = () => {
      const wait = SCROLL_THROTTLE_MS - (Date.now() - lastCheck);
      if (wait <= 0) check();
      else
        trailing ??= setTimeout(() => {
          trailing = undefined;
          check();
        }, wait);
    };
    window.addEventListener('scroll', onScroll, { passive: true });
    window.addEventListener('resize', onScroll);
    // A first page shorter than the screen cannot be scrolled: check once without a scroll.
    check();
    return () => {
      window.removeEventListener('scroll', onScroll);
      window.removeEventListener('resize', onScroll);
      clearTimeout(trailing);
    };
  }, [enabled, target]);
}

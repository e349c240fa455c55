import { useState } from 'react';

/** The app's initials (up to two letters or digits), for a tile in place of an icon that failed. */
export function initialsOf(name: string): string {
  const words = name.match(/[\p{L}\p{N}]+/gu) ?? [];
  const letters = words.length > 1 ? [words[0]![0], words[1]![0]] : [...(words[0] ?? '?')].slice(0, 2);
  return letters.join('').toUpperCase();
}

/** A stable colour per name, dark enough for white text (WCAG AA). */
function tileColour(name: string): string {
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.codePointAt(0)!) >>> 0;
  return `hsl(${hash % 360} 55% 30%)`;
}

/**
 * The store's icon; when it cannot load (no network to the store, a gone host), the app's
 * initials on a coloured tile instead of a broken-image glyph.
 */
export function AppIcon({ src, name, size }: { src: string; name: string; size: number }) {
  const [failedSrc, setFailedSrc] = useState<string | null>(null);
  const style = { width: size, height: size };
  if (!src || failedSrc === src) {
    return (
      <span
        className="icon-tile rounded-3 flex-shrink-0 app-icon-fallback"
        style={{ ...style, background: tileColour(name) }}
        aria-hidden="true"
      >
        {initialsOf(name)}
      </span>
    );
  }
  return (
    <img
      src={src}
      alt=""
      width={size}
      height={size}
      className="rounded-3 flex-shrink-0 app-icon"
      loading="lazy"
      onError={() => setFailedSrc(src)}
    />
  );
}

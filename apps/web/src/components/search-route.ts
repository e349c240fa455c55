import { country as countrySchema, type Country } from '@sideport/contracts';

/** What the search box is prefilled with: the current search route's country and keyword. */
export interface SearchRoute {
  country?: Country;
  keyword?: string;
}

/** A malformed escape (a typed '/search/KR/100%') is kept as typed rather than breaking the page. */
function decodeKeyword(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** Reads /search/{country}/{keyword*}; the keyword may contain slashes (docs/product.md, Screens). */
export function parseSearchRoute(pathname: string): SearchRoute {
  const match = /^\/search\/([^/]+)\/(.*)$/.exec(pathname);
  if (!match) return {};
  const parsed = countrySchema.safeParse(decodeKeyword(match[1]!).toUpperCase());
  return { ...(parsed.success ? { country: parsed.data } : {}), keyword: decodeKeyword(match[2]!) };
}

/** docs/product.md, Screens: a non-empty keyword goes to /search/{country}/{keyword}, an empty one to /latest. */
export function searchPath(country: Country, keyword: string): string {
  const trimmed = keyword.trim();
  return trimmed ? `/search/${country}/${encodeURIComponent(trimmed)}` : '/latest';
}

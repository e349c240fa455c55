import { describe, expect, it } from 'vitest';
import { parseSearchRoute, searchPath } from './search-route';

describe('searchPath', () => {
  it('goes to /latest for an empty or blank keyword', () => {
    expect(searchPath('KR', '')).toBe('/latest');
    expect(searchPath('KR', '   ')).toBe('/latest');
  });

  it('keeps a keyword with slashes in one path segment', () => {
    expect(searchPath('US', ' AC/DC live ')).toBe('/search/US/AC%2FDC%20live');
  });
});

describe('parseSearchRoute', () => {
  it('prefills country and keyword from a search route, and nothing elsewhere', () => {
    expect(parseSearchRoute('/search/us/AC%2FDC%20live')).toEqual({ country: 'US', keyword: 'AC/DC live' });
    expect(parseSearchRoute('/search/KR/a/b')).toEqual({ country: 'KR', keyword: 'a/b' });
    expect(parseSearchRoute('/latest')).toEqual({});
  });

  it('ignores an unsupported country and survives a malformed escape', () => {
    expect(parseSearchRoute('/search/FR/100%')).toEqual({ keyword: '100%' });
  });
});

import { describe, expect, it } from 'vitest';
import { afterSignInPath, useClientStore } from './store';

describe('afterSignInPath', () => {
  it('returns to last_page, or to / when that was the sign-in or sign-up page', () => {
    expect(afterSignInPath('/my')).toBe('/my');
    expect(afterSignInPath('/search/KR/a%2Fb')).toBe('/search/KR/a%2Fb');
    expect(afterSignInPath('/sign-in')).toBe('/');
    expect(afterSignInPath('/sign-up?x=1')).toBe('/');
  });

  it('never leaves the site', () => {
    expect(afterSignInPath('https://evil.example/')).toBe('/');
  });
});

describe('signedOut', () => {
  it('resets the grade and last_page with the sign-in (docs/product.md, Entities and fields)', () => {
    const store = useClientStore.getState();
    store.signedIn(2);
    store.setLastPage('/my');
    store.setCountry('DE');
    useClientStore.getState().signedOut();
    expect(useClientStore.getState()).toMatchObject({
      isLogin: false,
      grade: -1,
      last_page: '/',
      country: 'DE',
    });
  });
});

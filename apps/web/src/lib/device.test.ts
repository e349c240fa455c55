import { describe, expect, it } from 'vitest';
import { isIosDevice } from './device';

describe('isIosDevice', () => {
  it('knows an iPhone and an iPad, also one that asks for desktop pages, from a Mac or a PC', () => {
    const iphone =
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';
    const ipadDesktop =
      'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15';
    const windows =
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
    expect(isIosDevice({ userAgent: iphone, maxTouchPoints: 5 })).toBe(true);
    expect(isIosDevice({ userAgent: ipadDesktop, maxTouchPoints: 5 })).toBe(true);
    expect(isIosDevice({ userAgent: ipadDesktop, maxTouchPoints: 0 })).toBe(false);
    expect(isIosDevice({ userAgent: windows, maxTouchPoints: 0 })).toBe(false);
  });
});

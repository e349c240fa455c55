import { describe, expect, it } from 'vitest';
import { ownManifest } from './install-page';

describe('ownManifest', () => {
  const origin = 'https://sideport.example';
  it("takes only a sign's manifest on this site", () => {
    const manifest = `${origin}/files/sign/42/manifest.plist?expires=1&sig=abc`;
    expect(ownManifest(manifest, origin)).toBe(manifest);
    expect(ownManifest('https://evil.example/files/sign/42/manifest.plist', origin)).toBeNull();
    expect(ownManifest(`${origin}/api/info`, origin)).toBeNull();
    expect(ownManifest('not a url', origin)).toBeNull();
    expect(ownManifest(null, origin)).toBeNull();
  });
});

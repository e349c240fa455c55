import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync } from 'node:zlib';
import { publicConfig } from '@sideport/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './test/harness.js';

/**
 * The built web app as the server sends it: the build's brotli and gzip copies to browsers that
 * accept them, a year's immutable caching for hashed assets only, a 404 for a missing asset; and
 * GET /api/config, the public settings the app follows.
 */
const SCRIPT = `console.log(${JSON.stringify('sideport '.repeat(400))});`;
const PAGE =
  '<!doctype html><title>Sideport</title><div id="root"></div><script src="/assets/index-abc123.js"></script>';

function writeBuiltApp(dir: string) {
  mkdirSync(path.join(dir, 'assets'), { recursive: true });
  const files: Record<string, string> = { 'index.html': PAGE, 'assets/index-abc123.js': SCRIPT };
  for (const [name, text] of Object.entries(files)) {
    writeFileSync(path.join(dir, name), text);
    writeFileSync(path.join(dir, `${name}.br`), brotliCompressSync(text));
    writeFileSync(path.join(dir, `${name}.gz`), gzipSync(text));
  }
  writeFileSync(path.join(dir, 'manifest.webmanifest'), '{"name":"Sideport"}');
}

describe('the built web app', () => {
  let t: TestApp;
  let dist: string;
  beforeAll(async () => {
    dist = mkdtempSync(path.join(tmpdir(), 'sideport-dist-'));
    writeBuiltApp(dist);
    t = await createTestApp('pglite', { env: { WEB_DIST_DIR: dist } });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dist, { recursive: true, force: true });
  });

  it('sends the brotli copy to a browser that accepts it, gzip to one that accepts only that, else the file', async () => {
    const get = (url: string, acceptEncoding?: string) =>
      t.app.inject({ url, headers: acceptEncoding ? { 'accept-encoding': acceptEncoding } : {} });
    for (const [url, text, type] of [
      ['/assets/index-abc123.js', SCRIPT, /^(text|application)\/javascript; charset=utf-8$/],
      ['/', PAGE, /^text\/html; charset=utf-8$/],
      ['/latest', PAGE, /^text\/html; charset=utf-8$/],
    ] as const) {
      const br = await get(url, 'gzip, deflate, br, zstd');
      expect([br.statusCode, br.headers['content-encoding']], url).toEqual([200, 'br']);
      expect(br.headers['content-type'], url).toMatch(type);
      expect(br.headers.vary, url).toContain('accept-encoding');
      expect(brotliDecompressSync(br.rawPayload).toString(), url).toBe(text);
      expect(br.rawPayload.length, url).toBeLessThan(Buffer.byteLength(text));

      const gz = await get(url, 'gzip');
      expect(gz.headers['content-encoding'], url).toBe('gzip');
      expect(gunzipSync(gz.rawPayload).toString(), url).toBe(text);

      const plain = await get(url);
      expect([plain.headers['content-encoding'], plain.body], url).toEqual([undefined, text]);
      expect(plain.headers.vary, url).toContain('accept-encoding');
    }
  });

  it('caches hashed assets for a year, immutable, and has the page and other files revalidated', async () => {
    const asset = await t.app.inject({
      url: '/assets/index-abc123.js',
      headers: { 'accept-encoding': 'br' },
    });
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    for (const url of ['/', '/latest', '/manifest.webmanifest']) {
      const res = await t.app.inject({ url, headers: { 'accept-encoding': 'br' } });
      expect(res.headers['cache-control'], url).toBe('no-cache');
    }
  });

  it('answers a missing asset 404, not with the page', async () => {
    for (const url of ['/assets/index-gone99.js', '/assets/index-abc123.js.map']) {
      const res = await t.app.inject({ url });
      expect([res.statusCode, res.headers['content-type'], res.body], url).toEqual([
        404,
        'text/plain; charset=utf-8',
        `There is no GET ${url} here.`,
      ]);
    }
  });
});

describe('GET /api/config', () => {
  let plain: TestApp;
  let offering: TestApp;
  let work: string;
  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'sideport-config-'));
    const dylib = path.join(work, 'libiap.dylib');
    writeFileSync(dylib, '');
    plain = await createTestApp('pglite', { env: { CHAT_URL: 'https://chat.example.org/x' } });
    offering = await createTestApp('pglite', { env: { SIGN_DYLIBS_IAP: dylib, DECRYPT_ALLOW_PAID: 'true' } });
  }, 180_000);
  afterAll(async () => {
    await plain.close();
    await offering.close();
    rmSync(work, { recursive: true, force: true });
  });

  it('names the sign types this server signs in and whether it decrypts paid apps', async () => {
    const config = (t: TestApp) =>
      t.app.inject({ url: '/api/config' }).then((r) => publicConfig.parse(r.json()));
    // No dylibs: normal and DUP only.
    expect(await config(plain)).toEqual({
      chatUrl: 'https://chat.example.org/x',
      channelUrl: null,
      signTypes: [0, 4],
      decryptPaid: false,
      agentsOnline: 0,
      agentLastSeenAt: null,
      feather: false,
    });
    // The IAP dylibs alone: IAP too, not IGG nor IAP+IGG, which needs both.
    expect(await config(offering)).toMatchObject({
      chatUrl: null,
      channelUrl: null,
      signTypes: [0, 1, 4],
      decryptPaid: true,
    });
  });
});

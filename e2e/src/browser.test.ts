import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { bundledChromium, findChromium } from './browser.js';

describe('the browser the tests drive', () => {
  it('is CHROMIUM_PATH when set', async () => {
    const saved = process.env.CHROMIUM_PATH;
    process.env.CHROMIUM_PATH = '/opt/some/chrome';
    try {
      expect(await findChromium()).toMatchObject({
        executablePath: '/opt/some/chrome',
        source: 'CHROMIUM_PATH',
      });
    } finally {
      if (saved === undefined) delete process.env.CHROMIUM_PATH;
      else process.env.CHROMIUM_PATH = saved;
    }
  });

  // What a Linux machine with only Node.js uses: the npm package's own binary, unpacked.
  it.runIf(process.platform === 'linux' && process.arch === 'x64')(
    "starts from the @sparticuz/chromium package's binary and renders a page",
    async () => {
      const { executablePath, env } = await bundledChromium();
      const browser = await chromium.launch({
        executablePath,
        env: { ...process.env, ...env },
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
      });
      try {
        const page = await browser.newPage();
        await page.setContent('<main><h1>Sideport</h1></main>');
        expect(await page.getByRole('heading').innerText()).toBe('Sideport');
      } finally {
        await browser.close();
      }
    },
  );
});

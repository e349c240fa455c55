/**
 * First load of the web app on a phone over a slow network: Chromium at 375 x 812 with an iPhone's
 * user agent, throttled by the DevTools protocol to 1.6 Mbps down, 750 kbps up and 150 ms of
 * latency, opens /latest of the real server (a temporary embedded database with a seeded
 * catalogue of 30 decrypted apps) and measures:
 *
 *   - JS transferred (compressed, as sent) by the time the first app card is painted,
 *   - everything transferred by then, and once the network is idle,
 *   - the time from navigation to the first app card painted.
 *
 * In the same run, alternating with it, the same is measured for the web app as it was before
 * this work (commit BASELINE_COMMIT, built from git into bench/out/), served by the same server.
 *
 *   npm run bench:web            (BENCH_ROUNDS=5 to change the number of rounds, median shown)
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { openDatabase } from '../../apps/server/dist/db/client.js';
import * as catalog from '../../apps/server/dist/modules/catalog/queries.js';
import { findChromium } from '../../e2e/src/browser.js';
import { median } from '../lib.js';

const root = path.resolve(import.meta.dirname, '../..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** The last commit before the mobile-first web app: its single, uncompressed bundle is the baseline. */
const BASELINE_COMMIT = process.env.BENCH_BASELINE_COMMIT ?? '3b399af';
const IPHONE_UA =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';
const NETWORK = { downloadBps: 1_600_000, uploadBps: 750_000, latencyMs: 150 };
const work = mkdtempSync(path.join(tmpdir(), 'sideport-bench-web-'));

const kB = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`;

/** The web app of BASELINE_COMMIT, built with its own contracts (the app as users got it). */
function buildBaseline(): string {
  const source = path.join(root, 'bench/out/web-baseline');
  rmSync(source, { recursive: true, force: true });
  mkdirSync(source, { recursive: true });
  // Inside the repository, so its packages resolve from the same node_modules.
  const archive = execFileSync('git', ['archive', BASELINE_COMMIT, 'apps/web', 'packages/contracts/src'], {
    cwd: root,
  });
  execFileSync('tar', ['-x', '-C', source], { input: archive });
  const config = path.join(source, 'vite.baseline.config.mjs');
  writeFileSync(
    config,
    `import react from '@vitejs/plugin-react';
export default {
  root: ${JSON.stringify(path.join(source, 'apps/web'))},
  logLevel: 'warn',
  plugins: [react()],
  resolve: {
    conditions: ['source', 'module', 'browser', 'development|production'],
    alias: [
      { find: '@sideport/contracts/without-eval', replacement: ${JSON.stringify(path.join(source, 'packages/contracts/src/without-eval.ts'))} },
      { find: '@sideport/contracts', replacement: ${JSON.stringify(path.join(source, 'packages/contracts/src/index.ts'))} },
    ],
  },
  build: { outDir: ${JSON.stringify(path.join(source, 'dist'))}, emptyOutDir: true, sourcemap: true, chunkSizeWarningLimit: 1024 },
};
`,
  );
  execFileSync(path.join(root, 'node_modules/.bin/vite'), ['build', '-c', config], {
    cwd: source,
    stdio: 'inherit',
    env: { ...process.env, NODE_ENV: 'production' },
  });
  return path.join(source, 'dist');
}

/** A data folder with 30 decrypted apps, as the latest list shows them. */
async function seededDataDir(name: string) {
  const dataDir = path.join(work, name);
  const database = await openDatabase({ pgliteDir: path.join(dataDir, 'db') });
  await database.migrate();
  for (let i = 0; i < 30; i++) {
    const appId = 8000 + i;
    await catalog.upsertApps(
      database.db,
      'KR',
      [
        {
          appId,
          name: `Bench App ${i}`,
          developer: `Developer ${i}`,
          version: '2.1',
          iconUrl: 'https://is1-ssl.mzstatic.com/image/thumb/x/512x512bb.jpg',
          storeUrl: `https://apps.apple.com/kr/app/id${appId}`,
          rating: 4.5,
          ratingCount: 1200,
          bundleId: `com.example.bench${i}`,
          minimumOs: '14.0',
          sizeBytes: 52_428_800,
          price: 0,
        },
      ],
      new Date(),
    );
    await catalog.insertVersion(database.db, {
      country: 'KR',
      appId,
      appVerId: appId + 1_000_000,
      version: '2.1',
      status: 'Done',
    });
  }
  await database.close();
  return dataDir;
}

async function startServer(dataDir: string, webDir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [path.join(root, 'apps/server/dist/main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      DATA_DIR: dataDir,
      WEB_DIST_DIR: webDir,
      ITUNES_BASE_URL: 'http://127.0.0.1:9',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /Sideport listening on (http:\/\/[\d.:]+)/.exec(output);
      if (match) resolve(match[1]!);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`server exited (${code}):\n${output}`)));
  });
  for (
    let i = 0;
    i < 300 &&
    (await fetch(`${url}/healthz`).then(
      (r) => r.status,
      () => 0,
    )) !== 200;
    i++
  )
    await new Promise((r) => setTimeout(r, 100));
  child.removeAllListeners('exit');
  return { url, child };
}

interface LoadFigures {
  firstCardMs: number;
  jsBytes: number;
  bytesAtFirstCard: number;
  totalBytes: number;
}

/** One first load of /latest in a fresh browser context (empty cache), throttled. */
async function measure(browser: Browser, url: string): Promise<LoadFigures> {
  const context = await browser.newContext({
    viewport: { width: 375, height: 812 },
    userAgent: IPHONE_UA,
    isMobile: true,
    hasTouch: true,
  });
  // The store's icons and the flags are on the internet, which a benchmark does not reach.
  await context.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => route.abort());
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: NETWORK.latencyMs,
    downloadThroughput: NETWORK.downloadBps / 8,
    uploadThroughput: NETWORK.uploadBps / 8,
  });
  const types = new Map<string, string>();
  const finished: Array<{ type: string; bytes: number }> = [];
  cdp.on('Network.responseReceived', (e) => types.set(e.requestId, e.type));
  cdp.on('Network.loadingFinished', (e) =>
    finished.push({ type: types.get(e.requestId) ?? '', bytes: e.encodedDataLength }),
  );
  // The moment the first card is in the document, then the frame that paints it.
  await page.addInitScript(() => {
    const w = window as unknown as { firstCardMs?: number };
    new MutationObserver((_, observer) => {
      if (!document.querySelector('[data-testid="app-card"]')) return;
      observer.disconnect();
      requestAnimationFrame(() => setTimeout(() => (w.firstCardMs = performance.now()), 0));
    }).observe(document, { childList: true, subtree: true });
  });
  await page.goto(`${url}/latest`);
  await page.waitForFunction(
    () => (window as unknown as { firstCardMs?: number }).firstCardMs !== undefined,
    null,
    {
      timeout: 60_000,
      polling: 20,
    },
  );
  const firstCardMs = await page.evaluate(() => (window as unknown as { firstCardMs: number }).firstCardMs);
  const atFirstCard = [...finished];
  await page.waitForLoadState('networkidle');
  await context.close();
  const sum = (list: typeof finished, type?: string) =>
    list.filter((f) => type === undefined || f.type === type).reduce((n, f) => n + f.bytes, 0);
  return {
    firstCardMs,
    jsBytes: sum(atFirstCard, 'Script'),
    bytesAtFirstCard: sum(atFirstCard),
    totalBytes: sum(finished),
  };
}

async function main() {
  console.log('building the web app (current) ...');
  // Into bench/out: the app's own dist may be served meanwhile (the browser tests build it too).
  const currentDist = path.join(root, 'bench/out/web-current');
  execFileSync(
    'npm',
    ['run', 'build', '-w', '@sideport/web', '--', '--outDir', currentDist, '--emptyOutDir'],
    {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, NODE_ENV: 'production' },
    },
  );
  console.log(`building the web app of ${BASELINE_COMMIT} (baseline) ...`);
  const baselineDist = buildBaseline();
  const servers = {
    current: await startServer(await seededDataDir('current'), currentDist),
    baseline: await startServer(await seededDataDir('baseline'), baselineDist),
  };
  const found = await findChromium();
  const browser = await chromium.launch({
    executablePath: found.executablePath,
    env: { ...process.env, ...found.env },
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--no-first-run',
      '--disable-quic',
    ],
  });
  const runs: Record<keyof typeof servers, LoadFigures[]> = { current: [], baseline: [] };
  try {
    // One warm-up each (the servers' first answers), then alternating rounds.
    await measure(browser, servers.baseline.url);
    await measure(browser, servers.current.url);
    for (let round = 0; round < ROUNDS; round++) {
      for (const which of round % 2
        ? (['current', 'baseline'] as const)
        : (['baseline', 'current'] as const)) {
        const figures = await measure(browser, servers[which].url);
        runs[which].push(figures);
        console.log(
          `${which.padEnd(8)} round ${round + 1}: first card ${(figures.firstCardMs / 1000).toFixed(2)} s, JS ${kB(figures.jsBytes)}, ` +
            `${kB(figures.bytesAtFirstCard)} by then, ${kB(figures.totalBytes)} in all`,
        );
      }
    }
  } finally {
    await browser.close();
    for (const server of Object.values(servers)) server.child.kill('SIGTERM');
  }
  const row = (which: keyof typeof servers) => {
    const r = runs[which];
    return [
      `${(median(r.map((f) => f.firstCardMs)) / 1000).toFixed(2)} s`,
      kB(median(r.map((f) => f.jsBytes))),
      kB(median(r.map((f) => f.bytesAtFirstCard))),
      kB(median(r.map((f) => f.totalBytes))),
    ];
  };
  console.log(
    `\n/latest at 375 x 812 (iPhone user agent), ${NETWORK.downloadBps / 1e6} Mbps down, ${NETWORK.latencyMs} ms latency, median of ${ROUNDS}:\n`,
  );
  console.log('| build | first app card painted | JS by then (as sent) | all by then | all, network idle |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  console.log(`| baseline (${BASELINE_COMMIT}) | ${row('baseline').join(' | ')} |`);
  console.log(`| current | ${row('current').join(' | ')} |`);
  console.log('\ntargets: JS <= 100 kB compressed, first card <= 1.5 s');
}

try {
  await main();
} finally {
  rmSync(work, { recursive: true, force: true });
}

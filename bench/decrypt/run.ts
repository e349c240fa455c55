/**
 * Decrypt pipeline benchmark (issue 11), on PostgreSQL:
 *  1. claims per second with 20 agents claiming at once through the agent API, against the same
 *     20 clients calling GET /healthz (HTTP plus one query) in the same run; no job claimed twice.
 *  2. a 1 GB IPA uploaded through the agent API to a server process, against a plain disk write of
 *     the same bytes in the same run, with the server's peak RSS sampled throughout.
 *
 *   npm run bench:decrypt      (BENCH_JOBS=20000 BENCH_AGENTS=20 BENCH_UPLOAD_MB=1024 to change)
 *
 * Targets: at least 1,000 claims/s; the upload at least 50 % of the disk write; server RSS < 200 MB.
 */
import { spawn } from 'node:child_process';
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sql } from 'drizzle-orm';
import { buildApp } from '../../apps/server/src/app.js';
import { openDatabase } from '../../apps/server/src/db/client.js';
import { startItunesServer } from '../../apps/server/src/dev/itunes-server.js';
import { makeSampleIpa } from '../../apps/server/src/dev/sample-ipa.js';
import { loadConfig } from '../../apps/server/src/platform/config.js';
import { benchDatabaseUrl, md5, createDatabase, dropDatabase } from '../lib.js';

const JOBS = Number(process.env.BENCH_JOBS ?? 20_000);
const AGENTS = Number(process.env.BENCH_AGENTS ?? 20);
const UPLOAD_MB = Number(process.env.BENCH_UPLOAD_MB ?? 1024);
const adminUrl = benchDatabaseUrl();
const root = path.resolve(import.meta.dirname, '../..');
const work = mkdtempSync(path.join(tmpdir(), 'sideport-bench-decrypt-'));

const json = (body: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** Signs in as the admin made from ADMIN_ID and makes an agent; returns the admin cookie and the token. */
async function adminAndAgent(baseUrl: string) {
  const signIn = await fetch(`${baseUrl}/api/sign-in`, json({ id: 'benchadmin', pw: md5('bench-password') }));
  const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;
  const made = await fetch(`${baseUrl}/api/admin/agents`, {
    ...json({ name: 'bench' }),
    // As the web app calls (docs/security.md, Cross-site requests).
    headers: { 'content-type': 'application/json', cookie, 'x-sideport-client': 'web' },
  });
  const { token } = (await made.json()) as { token: string };
  return { cookie, token };
}

// ---- 1. claims ----

async function claimsBench() {
  const db = await createDatabase(adminUrl);
  const database = await openDatabase({ url: db.url });
  await database.migrate();
  // Jobs as requests leave them: an app row, a Pending entry and a queued job each.
  await database.db.execute(
    sql.raw(`
    insert into apps (country, app_id, name, developer, version, icon_url, store_url, bundle_id, minimum_os, fetched_at)
    select 'KR', 100000 + i, 'App ' || i, 'Dev', '1.0', '', '', 'com.example.bench' || i, '14.0', now() + interval '1 day'
    from generate_series(1, ${JOBS}) i`),
  );
  await database.db.execute(
    sql.raw(`
    insert into versions (country, app_id, version, status, premium, requested_at, updated_at)
    select 'KR', 100000 + i, '1.0', 'Pending', i % 10 = 0, now(), now() from generate_series(1, ${JOBS}) i`),
  );
  await database.db.execute(
    sql.raw(`
    insert into jobs (kind, version_seq, country, app_id, priority, created_at, updated_at)
    select 'decrypt', seq, country, app_id, case when premium then 1 else 0 end, now(), now() from versions`),
  );
  await database.db.execute(sql.raw('analyze'));

  const config = loadConfig({
    LOG_LEVEL: 'silent',
    DATA_DIR: path.join(work, 'claims'),
    DATABASE_URL: db.url,
    ITUNES_BASE_URL: 'http://127.0.0.1:9',
    ADMIN_ID: 'benchadmin',
    ADMIN_PASSWORD: 'bench-password',
  });
  const built = await buildApp({ config, database });
  await built.services.auth.ensureUser('benchadmin', md5('bench-password'), 1);
  const baseUrl = await built.app.listen({ port: 0, host: '127.0.0.1' });
  const { token } = await adminAndAgent(baseUrl);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };

  const started = performance.now();
  const claimed = (
    await Promise.all(
      Array.from({ length: AGENTS }, async () => {
        const mine: string[] = [];
        for (;;) {
          const res = await fetch(`${baseUrl}/api/agent/claim`, { method: 'POST', headers, body: '{}' });
          if (res.status !== 200) throw new Error(`claim answered ${res.status}: ${await res.text()}`);
          const { job } = (await res.json()) as { job: { id: string } | null };
          if (!job) return mine;
          mine.push(job.id);
        }
      }),
    )
  ).flat();
  const claimSeconds = (performance.now() - started) / 1000;
  const unique = new Set(claimed.map((id) => id.split('-')[0])).size;

  // Baseline: the same clients, the same number of requests, on a route that costs HTTP and one query.
  const perClient = Math.ceil(claimed.length / AGENTS);
  const baseStarted = performance.now();
  await Promise.all(
    Array.from({ length: AGENTS }, async () => {
      for (let i = 0; i < perClient; i++) {
        const res = await fetch(`${baseUrl}/healthz`);
        await res.arrayBuffer();
      }
    }),
  );
  const baseSeconds = (performance.now() - baseStarted) / 1000;
  await built.app.close();
  await database.close();
  await dropDatabase(adminUrl, db.name);

  const claimsPerSecond = claimed.length / claimSeconds;
  const healthPerSecond = (perClient * AGENTS) / baseSeconds;
  console.log(
    `\n1. claims: ${AGENTS} agents at once, ${JOBS.toLocaleString()} queued jobs, one process (clients included), 2 cores`,
  );
  console.log(
    `   claims through the agent API   ${claimsPerSecond.toFixed(0).padStart(7)} /s  (${claimed.length} claimed, ${unique} distinct jobs)`,
  );
  console.log(`   GET /healthz, same clients     ${healthPerSecond.toFixed(0).padStart(7)} /s`);
  console.log(`   ratio                          ${(claimsPerSecond / healthPerSecond).toFixed(2)}`);
  const doubles = claimed.length - unique;
  console.log(
    `   target >= 1,000 claims/s and no job claimed twice: ${claimsPerSecond >= 1000 && doubles === 0 && unique === JOBS ? 'met' : 'missed'}` +
      (doubles ? ` (${doubles} double claims!)` : ''),
  );
}

// ---- 2. upload ----

/** Peak resident set size of a process, sampled from /proc every 50 ms. */
function sampleRss(pid: number) {
  let peak = 0;
  const read = () => {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      peak = Math.max(peak, kb * 1024);
    } catch {
      /* the process ended */
    }
  };
  read();
  const timer = setInterval(read, 50);
  return {
    reset: () => {
      peak = 0;
      read();
    },
    peak: () => peak,
    stop: () => clearInterval(timer),
  };
}

async function uploadBench() {
  const db = await createDatabase(adminUrl);
  const bundleId = 'com.example.large';
  const store = await startItunesServer({
    records: [
      {
        kind: 'software',
        trackId: 424242,
        trackName: 'Large App',
        bundleId,
        version: '1.0',
        price: 0,
        artistName: 'Bench',
      },
    ],
  });
  const ipa = path.join(work, 'large.ipa');
  const prepared = performance.now();
  await makeSampleIpa({ output: ipa, bundleId, version: '1.0', padBytes: UPLOAD_MB * 1024 * 1024 });
  const sizeBytes = statSync(ipa).size;
  console.log(
    `\nbuilt a ${(sizeBytes / 1024 / 1024).toFixed(0)} MB IPA in ${((performance.now() - prepared) / 1000).toFixed(1)} s`,
  );

  const server = spawn(process.execPath, [path.join(root, 'apps/server/dist/main.js')], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      DATA_DIR: path.join(work, 'upload'),
      DATABASE_URL: db.url,
      ITUNES_BASE_URL: store.url,
      ADMIN_ID: 'benchadmin',
      ADMIN_PASSWORD: 'bench-password',
      DECRYPT_MAX_IPA_MB: String(UPLOAD_MB + 64),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const match = /Sideport listening on (http:\/\/[\d.:]+)/.exec(out);
      if (match) resolve(match[1]!);
    };
    server.stdout!.on('data', onData);
    server.stderr!.on('data', onData);
    server.on('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
  const rss = sampleRss(server.pid!);
  try {
    const { cookie, token } = await adminAndAgent(baseUrl);
    const asked = await fetch(`${baseUrl}/api/decrypt/KR/424242`, {
      headers: { cookie, 'x-sideport-client': 'web' },
    });
    if (asked.status !== 200) throw new Error(`request answered ${asked.status}: ${await asked.text()}`);
    const claim = await fetch(`${baseUrl}/api/agent/claim`, {
      ...json({}),
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    });
    const { job } = (await claim.json()) as { job: { id: string } };

    // The floor: the same bytes read and written once by this process, as a plain copy to disk.
    const floorStarted = performance.now();
    await pipeline(
      createReadStream(ipa, { highWaterMark: 1024 * 1024 }),
      createWriteStream(path.join(work, 'copy.ipa')),
    );
    const floorSeconds = (performance.now() - floorStarted) / 1000;
    rmSync(path.join(work, 'copy.ipa'));

    rss.reset();
    const idleRss = rss.peak();
    const uploadStarted = performance.now();
    const uploaded = await fetch(`${baseUrl}/api/agent/jobs/${job.id}/ipa?app_ver_id=1`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/octet-stream',
        'content-length': String(sizeBytes),
      },
      body: Readable.toWeb(createReadStream(ipa, { highWaterMark: 1024 * 1024 })) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
    const uploadSeconds = (performance.now() - uploadStarted) / 1000;
    if (uploaded.status !== 200)
      throw new Error(`upload answered ${uploaded.status}: ${await uploaded.text()}`);
    const peak = rss.peak();

    const mbps = (seconds: number) => (sizeBytes / 1024 / 1024 / seconds).toFixed(0);
    console.log(
      `2. upload of ${(sizeBytes / 1024 / 1024).toFixed(0)} MB through the agent API (received, checked, stored), server in its own process`,
    );
    console.log(
      `   plain disk write of the same bytes  ${floorSeconds.toFixed(2).padStart(6)} s  ${mbps(floorSeconds).padStart(5)} MB/s`,
    );
    console.log(
      `   upload, check and store             ${uploadSeconds.toFixed(2).padStart(6)} s  ${mbps(uploadSeconds).padStart(5)} MB/s`,
    );
    console.log(`   ratio (upload speed / disk write)   ${(floorSeconds / uploadSeconds).toFixed(2)}`);
    console.log(
      `   server RSS: ${(idleRss / 1024 / 1024).toFixed(0)} MB before, ${(peak / 1024 / 1024).toFixed(0)} MB peak during the upload`,
    );
    console.log(
      `   target >= 0.50 of the disk write and RSS < 200 MB: ${floorSeconds / uploadSeconds >= 0.5 && peak < 200 * 1024 * 1024 ? 'met' : 'missed'}`,
    );
  } finally {
    rss.stop();
    server.kill('SIGTERM');
    await new Promise((resolve) => server.on('exit', resolve));
    await store.close();
    await dropDatabase(adminUrl, db.name);
  }
}

try {
  await claimsBench();
  if (UPLOAD_MB > 0) await uploadBench();
} finally {
  rmSync(work, { recursive: true, force: true });
}

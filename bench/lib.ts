/** What the benchmarks share: their figures' arithmetic and the few setup steps they all take. */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';

/** The median; of an even count, the mean of the two middle values. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Milliseconds as seconds with two decimals: '1.37 s'. */
export const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

export const md5 = (text: string) => createHash('md5').update(text).digest('hex');

/** A made-up iPhone UDID, distinct for each `n`. */
export const udidOf = (n: number) => `00008110-${String(n).padStart(16, '0')}`;

/** Signs up `id` on the server at `base` as the web app does, and answers its session cookie. */
export async function signUp(base: string, id: string): Promise<string> {
  const res = await fetch(`${base}/api/sign-up`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id, pw: md5('bench-password') }),
  });
  if (res.status !== 200) throw new Error(`sign-up failed: ${res.status} ${await res.text()}`);
  return res.headers.getSetCookie()[0]!.split(';')[0]!;
}

/** The PostgreSQL server a benchmark makes its databases on. */
export function benchDatabaseUrl(): string {
  const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('Set BENCH_DATABASE_URL (or run through scripts/with-postgres.sh).');
  return url;
}

/** A new, empty database on the PostgreSQL server of `adminUrl`, for one benchmark run. */
export async function createDatabase(adminUrl: string): Promise<{ name: string; url: string }> {
  const name = `sideport_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${name} with (force)`);
  await admin.end();
}

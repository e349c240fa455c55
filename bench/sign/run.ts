/**
 * Signing benchmark. For IPAs of about 50 MB, 300 MB and 1 GB of content:
 * - the breakdown of a first sign by stage (wall and CPU time of each alone) and of its peak RSS
 *   by source;
 * - in the same rounds, in alternating order: `cp` of the IPA (in-kernel copy), a plain copy in
 *   Node (positional reads and writes of 8 MiB), a first sign (nothing cached), the n-th
 *   user's sign (another profile, with the version's digests, code and copied stretch kept), and, when ZSIGN=/path/to/zsign is set, zsign -z 6
 *   and -z 0 with the same identity and profile;
 * - medians of the rounds, the ratios to both floors and to zsign, and the targets met or missed.
 *
 *   npm run bench:sign        (BENCH_SIZES_MB=300,1024 and BENCH_ROUNDS=5 to choose)
 */
import { execFileSync } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SIGN_PROCESS_TUNING } from '../../packages/ipa/src/process-tuning.js';
import { createTestPki } from '../../packages/ipa/src/test-support/pki.js';
import { makeBenchIpa } from './make-ipa.js';
import { median, seconds } from '../lib.js';

const root = path.resolve(import.meta.dirname, '../..');
const fixture = path.resolve(root, 'fixtures/binaries/fastlane_very-capable-app_arm64_cryptid0.ipa');
const sizesMB = (process.env.BENCH_SIZES_MB ?? '50,300,1024').split(',').map(Number);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const zsign = process.env.ZSIGN;
const dir = mkdtempSync(path.join(tmpdir(), 'sideport-bench-sign-'));
// GNU time reports a child's peak RSS (zsign's); without it that column stays empty.
const gnuTime = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

interface Run {
  ms: number;
  cpuMs?: number;
  mainCpuMs?: number;
  maxRssMB?: number;
  baseRssMB?: number;
  heapMB?: number;
  buffersMB?: number;
}

/** One sign in a fresh process started as a sign worker is (SIGN_PROCESS_TUNING). */
function signOnce(input: string, output: string, p12: string, profile: string, cacheDir: string): Run {
  const out = execFileSync(
    process.execPath,
    [
      ...SIGN_PROCESS_TUNING.execArgv,
      path.join(import.meta.dirname, 'sign-once.mjs'),
      input,
      output,
      p12,
      profile,
      cacheDir,
    ],
    {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, ...SIGN_PROCESS_TUNING.env },
    },
  );
  return JSON.parse(out.trim().split('\n').at(-1)!) as Run;
}

/** A command's wall time, CPU time and (with GNU time) peak RSS. */
function command(file: string, args: string[]): Run {
  const started = performance.now();
  if (gnuTime === undefined) {
    execFileSync(file, args, { stdio: 'ignore' });
    return { ms: performance.now() - started };
  }
  const report = path.join(dir, 'time.txt');
  execFileSync(gnuTime, ['-o', report, '-f', '%U %S %M', file, ...args], { stdio: 'ignore' });
  const ms = performance.now() - started;
  const [user, system, maxKB] = execFileSync('cat', [report], { encoding: 'utf8' })
    .trim()
    .split(/\s+/)
    .map(Number) as [number, number, number];
  return { ms, cpuMs: (user + system) * 1000, maxRssMB: maxKB / 1024 };
}

/** The plain copy floor: positional reads and writes of 8 MiB through one buffer. */
function nodeCopy(input: string, output: string): Run {
  const started = performance.now();
  const buffer = Buffer.allocUnsafe(8 * 1024 * 1024);
  const from = openSync(input, 'r');
  const to = openSync(output, 'w');
  try {
    const size = fstatSync(from).size;
    for (let at = 0; at < size;) {
      const n = readSync(from, buffer, 0, Math.min(buffer.length, size - at), at);
      writeSync(to, buffer, 0, n, at);
      at += n;
    }
  } finally {
    closeSync(from);
    closeSync(to);
  }
  return { ms: performance.now() - started };
}

const mb = (value: number | undefined) => (value === undefined ? '—' : `${value.toFixed(0)} MB`);
const pad = (cells: string[], widths: number[]) =>
  cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');

interface Stage {
  wallMs: number;
  cpuMs: number;
  MB?: number;
  entries?: number;
  retainedMB?: number;
}

function printBreakdown(stages: Record<string, Stage>, first: Run[]) {
  console.log('\n  breakdown of a first sign: each stage alone, one after another');
  const widths = [28, 9, 9, 22];
  console.log(`  ${pad(['stage', 'wall', 'CPU', 'of'], widths)}`);
  for (const [name, stage] of Object.entries(stages)) {
    const of =
      stage.entries !== undefined
        ? `${stage.entries} entries`
        : stage.MB !== undefined
          ? `${stage.MB.toFixed(0)} MB`
          : '';
    console.log(`  ${pad([name, seconds(stage.wallMs), seconds(stage.cpuMs), of], widths)}`);
  }
  const sum = Object.values(stages).reduce((n, stage) => n + stage.cpuMs, 0);
  const cpu = median(first.map((r) => r.cpuMs ?? 0));
  const main = median(first.map((r) => r.mainCpuMs ?? 0));
  console.log(`  ${pad(['sum of the stages', '', seconds(sum), ''], widths)}`);
  console.log(
    `  the sign itself (median): ${seconds(median(first.map((r) => r.ms)))} wall, ${seconds(cpu)} CPU, of it ${seconds(main)} on the main thread and ${seconds(cpu - main)} on others (libuv pool, workers, GC)`,
  );
  // Medians of the first signs' peaks; the peaks of heap and buffers need not fall together.
  const peak = median(first.map((r) => r.maxRssMB ?? 0));
  const base = median(first.map((r) => r.baseRssMB ?? 0));
  const heap = median(first.map((r) => r.heapMB ?? 0));
  const buffers = median(first.map((r) => r.buffersMB ?? 0));
  const table = stages['entry table']?.retainedMB ?? 0;
  console.log(
    `  peak RSS ${mb(peak)}: node and the package's code ${mb(base)} before signing; at their peaks, the JS heap ${mb(heap)} ` +
      `(the entry table ${table.toFixed(1)} MB of it) and buffers outside it ${mb(buffers)}, live and not yet collected, on the main thread; the digest thread's heap is not in these`,
  );
}

try {
  // Signing runs the compiled package, as the server does; build it first.
  execFileSync('npx', ['tsc', '-b', 'packages/ipa'], { cwd: root, stdio: 'inherit' });
  const pki = createTestPki(dir);
  const p12 = path.join(dir, 'id.p12');
  const profileA = path.join(dir, 'a.mobileprovision');
  const profileB = path.join(dir, 'b.mobileprovision');
  writeFileSync(profileA, pki.profile());
  writeFileSync(profileB, pki.profile({ appId: `${pki.teamId}.org.fastlane.very-capable-app` }));
  const zsignTemp = path.join(dir, 'zsign-tmp');
  mkdirSync(zsignTemp);
  console.log(
    `${rounds} rounds per size in alternating order, medians; zsign: ${zsign ?? 'not set (ZSIGN=/path/to/zsign)'}`,
  );
  const summary: string[] = [];
  for (const sizeMB of sizesMB) {
    const input = path.join(dir, `bench-${sizeMB}.ipa`);
    await makeBenchIpa(fixture, input, sizeMB * 1024 * 1024);
    const ipaMB = statSync(input).size / 1024 / 1024;
    const entryCount = Number(
      execFileSync('unzip', ['-Z1', input], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
        .trim()
        .split('\n').length,
    );
    console.log(`\n${sizeMB} MB of content: IPA of ${ipaMB.toFixed(0)} MB, ${entryCount} entries`);
    const stages = JSON.parse(
      execFileSync(
        process.execPath,
        ['--expose-gc', path.join(import.meta.dirname, 'stages.mjs'), input, p12],
        { cwd: root, encoding: 'utf8' },
      )
        .trim()
        .split('\n')
        .at(-1)!,
    ) as Record<string, Stage>;

    const output = path.join(dir, 'out.ipa');
    const runs: Record<string, Run[]> = {};
    let coldCaches = 0;
    const contenders: [string, () => Run][] = [
      ['cp', () => command('cp', [input, output])],
      ['node copy', () => nodeCopy(input, output)],
      // A fresh cache directory each time: nothing cached, and the sign fills it as a first one does.
      [
        'first sign',
        () => signOnce(input, output, p12, profileA, path.join(dir, `cold-cache-${sizeMB}-${coldCaches++}`)),
      ],
      // Another user's profile, with the version's digests, code and copied stretch kept.
      ["n-th user's sign", () => signOnce(input, output, p12, profileB, path.join(dir, `cache-${sizeMB}`))],
      ...(zsign === undefined
        ? []
        : ([6, 0] as const).map((level): [string, () => Run] => [
            `zsign -z ${level}`,
            () =>
              command(zsign, [
                '-q',
                '-t',
                zsignTemp,
                '-k',
                p12,
                '-p',
                pki.password,
                '-m',
                profileA,
                '-z',
                String(level),
                '-o',
                output,
                input,
              ]),
          ])),
    ];
    // Fill the cache the n-th signs read: the first sign keeps the digests and code, the second
    // (another profile, as a service's second user) the copied stretch.
    signOnce(input, output, p12, profileA, path.join(dir, `cache-${sizeMB}`));
    signOnce(input, output, p12, profileB, path.join(dir, `cache-${sizeMB}`));
    const sizes: Record<string, number> = {};
    for (let round = 0; round < rounds; round++) {
      // Each round starts one further along, and odd rounds run backwards.
      const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]!);
      if (round % 2 === 1) order.reverse();
      for (const [name, run] of order) {
        rmSync(output, { force: true }); // so no run pays for dropping the last one's pages
        (runs[name] ??= []).push(run());
        sizes[name] = statSync(output).size / 1024 / 1024;
      }
    }
    const med = (name: string) => median(runs[name]!.map((r) => r.ms));
    const widths = [16, 9, 9, 10, 10, 11, 9];
    console.log(`  ${pad(['', 'wall', 'CPU', 'peak RSS', 'output', 'x cp', 'x node copy'], widths)}`);
    for (const name of Object.keys(runs)) {
      const list = runs[name]!;
      const cpu = list.every((r) => r.cpuMs !== undefined) ? seconds(median(list.map((r) => r.cpuMs!))) : '—';
      const rss = list.every((r) => r.maxRssMB !== undefined)
        ? mb(median(list.map((r) => r.maxRssMB!)))
        : '—';
      console.log(
        `  ${pad([name, seconds(med(name)), cpu, rss, mb(sizes[name]), (med(name) / med('cp')).toFixed(1), (med(name) / med('node copy')).toFixed(1)], widths)}`,
      );
    }
    const first = med('first sign');
    const cached = med("n-th user's sign");
    const firstRss = median(runs['first sign']!.map((r) => r.maxRssMB!));
    const cachedRss = median(runs["n-th user's sign"]!.map((r) => r.maxRssMB!));
    if (zsign !== undefined) {
      console.log(
        `  first sign is ${(med('zsign -z 6') / first).toFixed(1)}x as fast as zsign -z 6 and ${(med('zsign -z 0') / first).toFixed(1)}x zsign -z 0; the n-th user's sign ${(med('zsign -z 6') / cached).toFixed(1)}x and ${(med('zsign -z 0') / cached).toFixed(1)}x`,
      );
    }
    printBreakdown(stages, runs['first sign']!);

    if (sizeMB === 1024) {
      const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
      console.log('\n  targets at 1 GB (medians):');
      console.log(`    first sign at most 2.5 s: ${seconds(first)}, ${verdict(first <= 2500)}`);
      if (zsign !== undefined) {
        console.log(
          `    at least 12x zsign -z 6: ${(med('zsign -z 6') / first).toFixed(1)}x, ${verdict(med('zsign -z 6') / first >= 12)}`,
        );
        console.log(
          `    at least 4x zsign -z 0: ${(med('zsign -z 0') / first).toFixed(1)}x, ${verdict(med('zsign -z 0') / first >= 4)}`,
        );
      }
      console.log(
        `    n-th user's sign at most 2x cp: ${(cached / med('cp')).toFixed(2)}x, ${verdict(cached <= 2 * med('cp'))}`,
      );
      console.log(
        `    peak RSS at most 96 MB: first ${mb(firstRss)}, n-th ${mb(cachedRss)}, ${verdict(Math.max(firstRss, cachedRss) <= 96)}`,
      );
    }
    const zsignCell = (level: number) =>
      runs[`zsign -z ${level}`] ? seconds(med(`zsign -z ${level}`)) : '—';
    const zsignRss = runs['zsign -z 0']
      ? mb(median(runs['zsign -z 0'].map((r) => r.maxRssMB ?? Number.NaN)))
      : '—';
    summary.push(
      `| ${sizeMB >= 1024 ? `${sizeMB / 1024} GB` : `${sizeMB} MB`} content, ${ipaMB.toFixed(0)} MB, ${entryCount} entries | ${zsignCell(6)} | ${zsignCell(0)} | ` +
        `${seconds(first)} (${seconds(median(runs['first sign']!.map((r) => r.cpuMs!)))} CPU) | ${seconds(cached)} | ${seconds(med('cp'))} | ${seconds(med('node copy'))} | ${mb(firstRss)} / ${zsignRss} |`,
    );
    rmSync(input);
  }
  console.log(
    "\n| IPA | zsign -z 6 | zsign -z 0 | sideport-ipa sign | n-th user's sign | `cp` | node copy | peak RSS sideport / zsign |",
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const line of summary) console.log(line);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/**
 * Signing benchmark (issue 4): IPAs of about 50 MB, 300 MB and 1 GB; per size the sign wall time,
 * MB/s, peak RSS, and the ratio to the raw floor measured in the same run (read the IPA once and
 * write a copy). Then a second sign of the same version for another profile.
 *
 *   npm run bench:sign            (BENCH_SIZES_MB=50,300 to choose sizes)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createReadStream, createWriteStream } from 'node:fs';
import { SIGN_PROCESS_TUNING } from '../../packages/ipa/src/process-tuning.js';
import { createTestPki } from '../../packages/ipa/src/test-support/pki.js';
import { makeBenchIpa } from './make-ipa.js';

const root = path.resolve(import.meta.dirname, '../..');
const fixture = path.resolve(root, 'fixtures/binaries/fastlane_very-capable-app_arm64_cryptid0.ipa');
const sizesMB = (process.env.BENCH_SIZES_MB ?? '50,300,1024').split(',').map(Number);
const dir = mkdtempSync(path.join(tmpdir(), 'sideport-bench-sign-'));

async function rawFloorMs(input: string, output: string) {
  const started = performance.now();
  await pipeline(createReadStream(input), createWriteStream(output));
  return performance.now() - started;
}

/**
 * One sign in a fresh process. `tuned` starts it as a sign worker is started (SIGN_PROCESS_TUNING:
 * two malloc arenas, small V8 semi-spaces); otherwise with node's defaults, for comparison.
 */
function signOnce(input: string, output: string, p12: string, profile: string, cacheDir: string, tuned = true): { ms: number; maxRssMB: number } {
  const execArgv = tuned ? [...SIGN_PROCESS_TUNING.execArgv] : [];
  const out = execFileSync(process.execPath, [...execArgv, path.join(import.meta.dirname, 'sign-once.mjs'), input, output, p12, profile, cacheDir], {
    cwd: root,
    encoding: 'utf8',
    env: tuned ? { ...process.env, ...SIGN_PROCESS_TUNING.env } : process.env,
  });
  return JSON.parse(out.trim().split('\n').at(-1)!);
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
  console.log('size      IPA MB   floor s   sign s   MB/s   ratio   peak RSS MB   (node defaults)   second sign s   ratio');
  for (const mb of sizesMB) {
    const input = path.join(dir, `bench-${mb}.ipa`);
    await makeBenchIpa(fixture, input, mb * 1024 * 1024);
    const ipaMB = statSync(input).size / 1024 / 1024;
    const floor = await rawFloorMs(input, path.join(dir, 'copy.ipa'));
    // The first sign digests every resource and fills the cache; the second (another profile) reads it.
    const cacheDir = path.join(dir, `cache-${mb}`);
    const first = signOnce(input, path.join(dir, 'signed-a.ipa'), p12, profileA, cacheDir);
    const second = signOnce(input, path.join(dir, 'signed-b.ipa'), p12, profileB, cacheDir);
    // The same first sign in a process started with node's defaults (no cache, so it does the same work).
    const untuned = signOnce(input, path.join(dir, 'signed-c.ipa'), p12, profileA, path.join(dir, `cache-untuned-${mb}`), false);
    console.log(
      [
        `${mb} MB`.padEnd(8),
        ipaMB.toFixed(0).padStart(8),
        (floor / 1000).toFixed(2).padStart(9),
        (first.ms / 1000).toFixed(2).padStart(8),
        (ipaMB / (first.ms / 1000)).toFixed(0).padStart(6),
        (first.ms / floor).toFixed(1).padStart(7),
        first.maxRssMB.toFixed(0).padStart(13),
        untuned.maxRssMB.toFixed(0).padStart(17),
        (second.ms / 1000).toFixed(2).padStart(15),
        (second.ms / floor).toFixed(1).padStart(7),
      ].join(' '),
    );
    rmSync(input);
  }
  console.log('\ntargets: 1 GB under 3x the floor, peak RSS under 256 MB, second sign under 1.5x the floor');
  console.log('peak RSS: started as a sign worker is (SIGN_PROCESS_TUNING); in brackets, with node defaults');
} finally {
  rmSync(dir, { recursive: true, force: true });
}

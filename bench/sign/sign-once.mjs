/**
 * One signing run in its own process, so peak RSS is this run's alone, through the package's
 * compiled public API (what the server runs). Prints JSON.
 *   node bench/sign/sign-once.mjs in.ipa out.ipa id.p12 profile.mobileprovision [cacheDir]
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { sign } from '../../packages/ipa/dist/index.js';

const [input, output, p12Path, profilePath, cacheDir] = process.argv.slice(2);
const p12 = readFileSync(p12Path);
const profile = readFileSync(profilePath);
const started = performance.now();
await sign({ input, output, identity: { p12, password: 'secret' }, profile, ...(cacheDir ? { cacheDir } : {}) });
const ms = performance.now() - started;
console.log(JSON.stringify({ ms, maxRssMB: peakRssMB() }));

/**
 * This process's own peak RSS. Linux keeps getrusage's ru_maxrss across fork and exec, so a child
 * of a large parent reports the parent's peak there; VmHWM belongs to this process's memory alone.
 */
function peakRssMB() {
  try {
    const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (hwm) return Number(hwm[1]) / 1024;
  } catch {
    // not Linux
  }
  return process.resourceUsage().maxRSS / 1024;
}

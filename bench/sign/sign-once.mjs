/**
 * One signing run in its own process, so peak RSS is this run's alone, through the package's
 * compiled public API (what the server runs). Prints JSON: wall and CPU time (all threads, and the
 * main thread alone), peak RSS, and what memory held at its peaks, sampled every few milliseconds.
 *   node bench/sign/sign-once.mjs in.ipa out.ipa id.p12 profile.mobileprovision [cacheDir]
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { clearInterval, setInterval } from 'node:timers';
import { sign } from '../../packages/ipa/dist/index.js';

const [input, output, p12Path, profilePath, cacheDir] = process.argv.slice(2);
const p12 = readFileSync(p12Path);
const profile = readFileSync(profilePath);
const MB = 1024 * 1024;
// What the process holds before signing: node itself and the package's code.
const baseRssMB = status('VmRSS');
const peaks = { heapMB: 0, buffersMB: 0 };
const sample = () => {
  const m = process.memoryUsage();
  peaks.heapMB = Math.max(peaks.heapMB, m.heapUsed / MB);
  peaks.buffersMB = Math.max(peaks.buffersMB, m.external / MB);
};
const sampler = setInterval(sample, 5);
const mainBefore = mainThreadCpuMs();
const cpu = process.cpuUsage();
const started = performance.now();
await sign({
  input,
  output,
  identity: { p12, password: 'secret' },
  profile,
  ...(cacheDir ? { cacheDir } : {}),
});
const ms = performance.now() - started;
const used = process.cpuUsage(cpu);
clearInterval(sampler);
sample();
console.log(
  JSON.stringify({
    ms,
    cpuMs: (used.user + used.system) / 1000,
    mainCpuMs: mainThreadCpuMs() - mainBefore,
    maxRssMB: status('VmHWM'),
    baseRssMB,
    ...peaks,
  }),
);

/**
 * This process's own figures. Linux keeps getrusage's ru_maxrss across fork and exec, so a child
 * of a large parent reports the parent's peak there; VmHWM belongs to this process's memory alone.
 */
function status(field) {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
    if (match) return Number(match[1]) / 1024;
  } catch {
    // not Linux
  }
  return process.resourceUsage().maxRSS / 1024;
}

/** CPU time of the main thread alone (its tid is the pid), from /proc; 0 where there is none. */
function mainThreadCpuMs() {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    // Fields after the command name: utime and stime are the 12th and 13th, in clock ticks (1/100 s).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}

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
console.log(JSON.stringify({ ms, maxRssMB: process.resourceUsage().maxRSS / 1024 }));

/** One signing run in its own process, so peak RSS is this run's alone. Prints JSON. */
import { readFileSync } from 'node:fs';
import { loadIdentity } from '../../packages/ipa/src/identity.js';
import { createMachOSigner } from '../../packages/ipa/src/sign-ipa/engine.js';
import { signIpa } from '../../packages/ipa/src/sign-ipa/sign-ipa.js';

const [input, output, p12Path, profilePath, cacheDir] = process.argv.slice(2) as [string, string, string, string, string | undefined];
const identity = loadIdentity({ p12: readFileSync(p12Path), password: 'secret' });
const started = performance.now();
await signIpa({ input, output, identity, profile: readFileSync(profilePath), signer: createMachOSigner(identity), ...(cacheDir ? { cacheDir } : {}) });
const ms = performance.now() - started;
console.log(JSON.stringify({ ms, maxRssMB: process.resourceUsage().maxRSS / 1024 }));

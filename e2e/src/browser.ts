/**
 * The Chromium the browser tests (and `npm run bench:web`) drive, so `npm test` needs nothing
 * but Node.js: CHROMIUM_PATH when set; else a Chromium or Chrome installed on the machine
 * (Debian's `chromium`, a Mac's Google Chrome); else, on Linux x64, the one the
 * `@sparticuz/chromium` package ships inside its npm tarball, unpacked to the temp folder on
 * first use (about 190 MB, a few seconds) with the NSS libraries it needs beside it.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { brotliDecompressSync } from 'node:zlib';

const INSTALLED = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
  '/Applications/Google Chrome.app/Contents/MacOS/Google Chrome',
  '/Applications/Chromium.app/Contents/MacOS/Chromium',
];

export interface BrowserExecutable {
  executablePath: string;
  /** What the browser process needs in its environment (the bundled one's library folder). */
  env: Record<string, string>;
  /** Where it came from, for a failure's message. */
  source: 'CHROMIUM_PATH' | 'installed' | '@sparticuz/chromium';
}

let bundled: Promise<BrowserExecutable> | undefined;

export async function findChromium(): Promise<BrowserExecutable> {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) return { executablePath: configured, env: {}, source: 'CHROMIUM_PATH' };
  const installed = INSTALLED.find((file) => existsSync(file));
  if (installed) return { executablePath: installed, env: {}, source: 'installed' };
  if (process.platform === 'linux' && process.arch === 'x64') return (bundled ??= bundledChromium());
  throw new Error(
    `No Chromium or Chrome found (looked at ${INSTALLED.join(', ')}): install Google Chrome or set CHROMIUM_PATH.`,
  );
}

/** The Chromium of the `@sparticuz/chromium` package (Linux x64), with its libraries unpacked. */
export async function bundledChromium(): Promise<BrowserExecutable> {
  const { default: chromium } = await import('@sparticuz/chromium');
  // Its graphics libraries are not needed headless with --disable-gpu.
  chromium.setGraphicsMode = false;
  const executablePath = await chromium.executablePath();
  // The package unpacks the NSS libraries it links only on Amazon Linux; any other Linux gets them too.
  const root = path.resolve(
    path.dirname(createRequire(import.meta.url).resolve('@sparticuz/chromium')),
    '../..',
  );
  const libDir = path.join(tmpdir(), 'al2023', 'lib');
  if (!existsSync(path.join(libDir, 'libnss3.so')))
    untar(brotliDecompressSync(readFileSync(path.join(root, 'bin', 'al2023.tar.br'))), path.dirname(libDir));
  const ldPath = [libDir, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  return { executablePath, env: { LD_LIBRARY_PATH: ldPath }, source: '@sparticuz/chromium' };
}

/** Writes the regular files of a ustar archive under `dir` (the library archive has nothing else). */
function untar(archive: Buffer, dir: string) {
  for (let at = 0; at + 512 <= archive.length;) {
    const header = archive.subarray(at, at + 512);
    const name = header.toString('utf8', 0, 100).replace(/\0.*$/s, '');
    if (!name) break;
    const prefix = header.toString('utf8', 345, 500).replace(/\0.*$/s, '');
    const size = parseInt(header.toString('utf8', 124, 136).replace(/\0.*$/s, '').trim() || '0', 8);
    const type = String.fromCharCode(header[156]!);
    const file = path.join(dir, prefix ? `${prefix}/${name}` : name);
    if (!path.resolve(file).startsWith(path.resolve(dir) + path.sep)) throw new Error(`bad path ${name}`);
    if (type === '0' || type === '\0') {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, archive.subarray(at + 512, at + 512 + size), { mode: 0o755 });
    } else if (type === '5') mkdirSync(file, { recursive: true });
    at += 512 + Math.ceil(size / 512) * 512;
  }
}

/**
 * Builds real iOS Mach-O files with Debian's clang and ld64.lld, without Apple's SDK: the C has no
 * libc calls and a stub libSystem supplies the one symbol lld insists on (dyld_stub_binder).
 *
 * Every build is kept, gzipped, in the repository's fixtures/macho under a hash of what made it
 * (the tool step, its source and options, and the bytes of every input file), so the tests run on
 * a machine without clang or lld: a build found there is copied, and no tool runs.
 * `packages/ipa/scripts/build-macho-fixtures.sh` makes them again (MACHO_FIXTURES=record) and
 * writes the tools' versions to fixtures/macho/TOOLS.txt.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';

export type Arch = 'arm64';

/** The first of `names` on the PATH (Debian names LLVM's tools with their version), else the last. */
function firstTool(names: string[], versionFlag: string): string {
  const found = names.find((name) => {
    try {
      execFileSync(name, [versionFlag], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
  return found ?? names.at(-1)!;
}

/** Looked up on first use only: a run that finds every build in fixtures/macho starts no tool. */
const tool = (names: string[], versionFlag: string) => {
  let found: string | undefined;
  return () => (found ??= firstTool(names, versionFlag));
};
const ld = tool(['ld64.lld-14', 'ld64.lld'], '--version');
const lipo = tool(['llvm-lipo-14', 'llvm-lipo'], '-version');
const objdump = tool(['llvm-objdump-14', 'llvm-objdump'], '--version');
/** llvm-objdump, for tests that read a file's load commands as an outside tool does. */
export const OBJDUMP = () => objdump();

/** The repository's fixtures/macho (src/test-support and dist/test-support are four levels below the root). */
export const MACHO_FIXTURES = resolve(import.meta.dirname, '../../../../fixtures/macho');
/** `record`: build with the tools and keep each result in fixtures/macho (the rebuild script sets it). */
const recording = () => process.env.MACHO_FIXTURES === 'record';
/** Builds that gzip to more than this (a test's random multi-megabyte blob) are made each run rather than committed. */
const MAX_KEPT_BYTES = 256 * 1024;

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/**
 * `out`, from fixtures/macho when a build of the same step, arguments and input bytes is kept
 * there; otherwise made by `make` (which runs the tools) and, when recording, kept.
 */
function kept(step: string, args: unknown, inputs: string[], out: string, make: () => void): string {
  const key = sha256(JSON.stringify([step, args, inputs.map((file) => sha256(readFileSync(file)))]));
  const file = join(MACHO_FIXTURES, `${step}-${key.slice(0, 16)}.gz`);
  if (!recording() && existsSync(file)) {
    writeFileSync(out, gunzipSync(readFileSync(file)));
    return out;
  }
  make();
  if (recording()) {
    const packed = gzipSync(readFileSync(out), { level: 9 });
    if (packed.length <= MAX_KEPT_BYTES) {
      mkdirSync(MACHO_FIXTURES, { recursive: true });
      writeFileSync(file, packed);
    }
  }
  return out;
}

function run(command: string, args: string[], cwd: string): void {
  try {
    execFileSync(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new Error(
        `${command} is not installed and fixtures/macho has no build for this test's binary: ` +
          'run packages/ipa/scripts/build-macho-fixtures.sh where clang and lld are installed.',
        { cause: err },
      );
    throw err;
  }
}

function compile(dir: string, name: string, source: string, arch: Arch): string {
  const c = join(dir, `${name}-${arch}.c`);
  const o = join(dir, `${name}-${arch}.o`);
  writeFileSync(c, source);
  run('clang', ['-target', `${arch}-apple-ios14.0`, '-O1', '-c', c, '-o', o], dir);
  return o;
}

function libSystem(dir: string, arch: Arch): string {
  const out = join(dir, `libSystem-${arch}.dylib`);
  if (!existsSync(out)) kept('libsystem', { arch }, [], out, () => makeLibSystem(dir, arch, out));
  return out;
}

function makeLibSystem(dir: string, arch: Arch, out: string): void {
  {
    const o = compile(
      dir,
      'libsystem',
      'void stub(void) __asm__("dyld_stub_binder");\nvoid stub(void) {}\n',
      arch,
    );
    run(
      ld(),
      [
        '-arch',
        arch,
        '-platform_version',
        'ios',
        '14.0',
        '14.0',
        '-dylib',
        '-install_name',
        '/usr/lib/libSystem.B.dylib',
        o,
        '-o',
        out,
      ],
      dir,
    );
  }
}

export interface BuildOptions {
  arch?: Arch;
  /** Dylibs (paths) to link against. */
  link?: string[];
  rpaths?: string[];
  /** Room left after the load commands (ld's -headerpad); lld's default is small. */
  headerPadBytes?: number;
  /** More object files to link in. */
  objects?: string[];
}

/** An MH_EXECUTE whose main returns a value computed by `helper` when linked with the helper dylib. */
export function buildExecutable(
  dir: string,
  name: string,
  source: string,
  options: BuildOptions = {},
): string {
  const arch = options.arch ?? 'arm64';
  const out = join(dir, `${name}-${arch}`);
  const system = libSystem(dir, arch);
  const inputs = [...(options.objects ?? []), ...(options.link ?? [])];
  const args = { name, source, arch, ...options, objects: undefined, link: undefined };
  return kept('execute', args, inputs, out, () => {
    const o = compile(dir, name, source, arch);
    run(
      ld(),
      [
        '-arch',
        arch,
        '-platform_version',
        'ios',
        '14.0',
        '14.0',
        '-execute',
        '-e',
        '_main',
        '-headerpad',
        `0x${(options.headerPadBytes ?? 0x400).toString(16)}`,
        o,
        ...(options.objects ?? []),
        ...(options.link ?? []),
        system,
        ...(options.rpaths ?? []).flatMap((path) => ['-rpath', path]),
        '-o',
        out,
      ],
      dir,
    );
  });
}

export function buildDylib(
  dir: string,
  name: string,
  source: string,
  installName: string,
  options: BuildOptions = {},
): string {
  const arch = options.arch ?? 'arm64';
  const out = join(dir, `${name}-${arch}.dylib`);
  const system = libSystem(dir, arch);
  const inputs = options.link ?? [];
  const args = { name, source, installName, arch, ...options, objects: undefined, link: undefined };
  return kept('dylib', args, inputs, out, () => {
    const o = compile(dir, name, source, arch);
    run(
      ld(),
      [
        '-arch',
        arch,
        '-platform_version',
        'ios',
        '14.0',
        '14.0',
        '-dylib',
        '-install_name',
        installName,
        '-headerpad',
        `0x${(options.headerPadBytes ?? 0x400).toString(16)}`,
        o,
        ...(options.link ?? []),
        system,
        '-o',
        out,
      ],
      dir,
    );
  });
}

export function buildFat(dir: string, name: string, slices: string[]): string {
  return lipoCreate(slices, join(dir, `${name}-fat`));
}

/**
 * `lipo -create` of `slices`: llvm-lipo when installed; otherwise the same layout written here
 * (fat_header, one fat_arch per slice from its mach_header, each slice at a 2^14 boundary), for
 * slices made during a test (a signed copy), which no committed fixture can hold.
 */
export function lipoCreate(slices: string[], out: string): string {
  return kept('fat', {}, slices, out, () => {
    try {
      run(lipo(), ['-create', ...slices, '-output', out], '.');
    } catch (err) {
      if (!/is not installed/.test((err as Error).message)) throw err;
      writeFileSync(out, fatOf(slices.map((slice) => readFileSync(slice))));
    }
  });
}

export function fatOf(slices: Buffer[]): Buffer {
  const header = Buffer.alloc(8 + slices.length * 20);
  header.writeUInt32BE(0xcafebabe, 0);
  header.writeUInt32BE(slices.length, 4);
  const parts: Buffer[] = [header];
  let end = header.length;
  slices.forEach((slice, i) => {
    const offset = Math.ceil(end / 0x4000) * 0x4000;
    const at = 8 + i * 20;
    header.writeUInt32BE(slice.readUInt32LE(4), at); // cputype
    header.writeUInt32BE(slice.readUInt32LE(8), at + 4); // cpusubtype
    header.writeUInt32BE(offset, at + 8);
    header.writeUInt32BE(slice.length, at + 12);
    header.writeUInt32BE(14, at + 16);
    parts.push(Buffer.alloc(offset - end), slice);
    end = offset + slice.length;
  });
  return Buffer.concat(parts);
}

export function objdumpHeaders(path: string): string {
  return execFileSync(objdump(), ['--macho', '--private-headers', path], { encoding: 'utf8' });
}

export const MAIN_SOURCE = 'int helper(int);\nint main(void) { return helper(21); }\n';
export const HELPER_SOURCE = 'int helper(int x) { return x * 2; }\n';
export const PLAIN_MAIN_SOURCE = 'static volatile int value = 7;\nint main(void) { return value; }\n';

/** An object file whose __TEXT,__const holds `data` as the symbol _blob (for large test binaries). */
export function buildDataObject(dir: string, name: string, data: Buffer, arch: Arch = 'arm64'): string {
  const bin = join(dir, `${name}.bin`);
  const s = join(dir, `${name}.s`);
  const o = join(dir, `${name}-${arch}.o`);
  writeFileSync(bin, data);
  return kept('blob', { arch, name: basename(bin) }, [bin], o, () => {
    writeFileSync(
      s,
      `.section __TEXT,__const\n.globl _blob\n.p2align 4\n_blob:\n.incbin "${basename(bin)}"\n`,
    );
    run('clang', ['-target', `${arch}-apple-ios14.0`, '-c', s, '-o', o], dir);
  });
}

/** Compiles and links with explicit tool arguments (armv7's own steps), kept like the builds above. */
export function keptToolRun(
  dir: string,
  steps: Array<{ tool: 'clang' | 'ld'; args: string[] }>,
  sources: Record<string, string>,
  out: string,
): string {
  return kept('steps', { steps, sources }, [], join(dir, out), () => {
    for (const [file, text] of Object.entries(sources)) writeFileSync(join(dir, file), text);
    for (const { tool: name, args } of steps) run(name === 'ld' ? ld() : 'clang', args, dir);
  });
}

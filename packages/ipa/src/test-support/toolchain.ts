/**
 * Builds real iOS Mach-O files with Debian's clang and ld64.lld, without Apple's SDK: the C has no
 * libc calls and a stub libSystem supplies the one symbol lld insists on (dyld_stub_binder).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

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

const LD = firstTool(['ld64.lld-14', 'ld64.lld'], '--version');
export const LIPO = firstTool(['llvm-lipo-14', 'llvm-lipo'], '-version');
export const OBJDUMP = firstTool(['llvm-objdump-14', 'llvm-objdump'], '--version');

function run(command: string, args: string[], cwd: string): void {
  execFileSync(command, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
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
  if (!existsSync(out)) {
    const o = compile(
      dir,
      'libsystem',
      'void stub(void) __asm__("dyld_stub_binder");\nvoid stub(void) {}\n',
      arch,
    );
    run(
      LD,
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
  return out;
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
  const o = compile(dir, name, source, arch);
  const out = join(dir, `${name}-${arch}`);
  run(
    LD,
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
      libSystem(dir, arch),
      ...(options.rpaths ?? []).flatMap((path) => ['-rpath', path]),
      '-o',
      out,
    ],
    dir,
  );
  return out;
}

export function buildDylib(
  dir: string,
  name: string,
  source: string,
  installName: string,
  options: BuildOptions = {},
): string {
  const arch = options.arch ?? 'arm64';
  const o = compile(dir, name, source, arch);
  const out = join(dir, `${name}-${arch}.dylib`);
  run(
    LD,
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
      libSystem(dir, arch),
      '-o',
      out,
    ],
    dir,
  );
  return out;
}

export function buildFat(dir: string, name: string, slices: string[]): string {
  const out = join(dir, `${name}-fat`);
  run(LIPO, ['-create', ...slices, '-output', out], dir);
  return out;
}

export function objdumpHeaders(path: string): string {
  return execFileSync(OBJDUMP, ['--macho', '--private-headers', path], { encoding: 'utf8' });
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
  writeFileSync(s, `.section __TEXT,__const\n.globl _blob\n.p2align 4\n_blob:\n.incbin "${bin}"\n`);
  run('clang', ['-target', `${arch}-apple-ios14.0`, '-c', s, '-o', o], dir);
  return o;
}

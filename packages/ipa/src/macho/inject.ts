/**
 * Load command edits for injection: add an LC_LOAD_DYLIB (or weak) in the free space after the
 * load commands, and point an existing dependency at another path. Both refuse, leaving the input
 * untouched, when the header has no room: code is never moved, so nothing else can break.
 */
import { IpaError } from '../errors.js';
import { LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB } from './constants.js';
import type { MachOSlice } from './parse.js';
import { rebuildMachO } from './rebuild.js';

export interface DylibLoad {
  /** e.g. '@executable_path/Frameworks/libtweak.dylib' or '@rpath/libtweak.dylib' */
  readonly path: string;
  /** LC_LOAD_WEAK_DYLIB: the app still launches when the dylib is missing. */
  readonly weak?: boolean;
}

// LC_CODE_SIGNATURE (linkedit_data_command) is 16 bytes; keep room for it when a slice has none.
const SIGNATURE_COMMAND_BYTES = 16;
// dylib_command: cmd, cmdsize, name.offset, timestamp, current_version, compatibility_version
const DYLIB_COMMAND_BYTES = 24;

/** Adds a dylib dependency to every slice; a slice that already loads that path is left as it is. */
export function addDylibLoad(bytes: Buffer, where: string, load: DylibLoad): Buffer {
  return rebuildMachO(bytes, where, (slice, info) => addToSlice(slice, info, where, load));
}

function addToSlice(bytes: Buffer, slice: MachOSlice, where: string, load: DylibLoad): Buffer {
  if (slice.dylibs.some((dylib) => dylib.name === load.path)) return bytes;
  const name = Buffer.from(`${load.path}\0`, 'utf8');
  const align = slice.is64 ? 8 : 4;
  const commandSize = Math.ceil((DYLIB_COMMAND_BYTES + name.length) / align) * align;
  const reserve = slice.codeSignature === undefined ? SIGNATURE_COMMAND_BYTES : 0;
  const at = slice.headerSizeBytes + slice.commandsSizeBytes;
  if (slice.freeCommandBytes < commandSize + reserve || !isZero(bytes, at, commandSize + reserve)) {
    throw new IpaError(
      'LOAD_COMMANDS_FULL',
      `Expected ${commandSize + reserve} free bytes after the load commands of ${where} (${slice.arch}) to add ${load.path}, ` +
        `found ${slice.freeCommandBytes}: the binary needs relinking with a larger -headerpad.`,
    );
  }
  const out = Buffer.from(bytes);
  out.writeUInt32LE(load.weak ? LC_LOAD_WEAK_DYLIB : LC_LOAD_DYLIB, at);
  out.writeUInt32LE(commandSize, at + 4);
  out.writeUInt32LE(DYLIB_COMMAND_BYTES, at + 8); // name.offset: the string follows the command
  out.writeUInt32LE(2, at + 12); // timestamp, as ld writes it
  out.writeUInt32LE(0x10000, at + 16); // current_version 1.0.0
  out.writeUInt32LE(0x10000, at + 20); // compatibility_version 1.0.0
  name.copy(out, at + DYLIB_COMMAND_BYTES);
  // mach_header: ncmds at 16, sizeofcmds at 20
  out.writeUInt32LE(slice.commandCount + 1, 16);
  out.writeUInt32LE(slice.commandsSizeBytes + commandSize, 20);
  return out;
}

/**
 * Points every dependency whose install name `matches` at `to` (e.g. a CydiaSubstrate reference
 * at the copy bundled in Frameworks). The new name must fit in the existing command.
 */
export function rewriteDylibPath(
  bytes: Buffer,
  where: string,
  matches: (name: string) => boolean,
  to: string,
): { bytes: Buffer; rewritten: number } {
  let rewritten = 0;
  const result = rebuildMachO(bytes, where, (sliceBytes, slice) => {
    const targets = slice.dylibs.filter((dylib) => matches(dylib.name) && dylib.name !== to);
    if (targets.length === 0) return sliceBytes;
    const out = Buffer.from(sliceBytes);
    for (const dylib of targets) {
      // The name runs from dylib.name.offset to cmdsize (parse.ts read both).
      const room = dylib.commandSize - dylib.nameOffset;
      const name = Buffer.from(`${to}\0`, 'utf8');
      if (name.length > room) {
        throw new IpaError(
          'LOAD_COMMANDS_FULL',
          `Expected room for "${to}" (${name.length} bytes) in the load command of ${dylib.name} in ${where}, found ${room} bytes.`,
        );
      }
      out.fill(0, dylib.commandOffset + dylib.nameOffset, dylib.commandOffset + dylib.commandSize);
      name.copy(out, dylib.commandOffset + dylib.nameOffset);
      rewritten++;
    }
    return out;
  });
  return { bytes: result, rewritten };
}

function isZero(bytes: Buffer, at: number, length: number): boolean {
  for (let i = at; i < at + length; i++) if (bytes[i] !== 0) return false;
  return true;
}

/** Bounds-checked reads shared by the Mach-O readers: a short buffer is an IpaError, never a RangeError. */
import { IpaError } from '../errors.js';

export function need(bytes: Buffer, at: number, length: number, where: string, what: string): void {
  needWithin(bytes.length, at, length, where, what);
}

/** The same against a size alone, before the bytes are read. */
export function needWithin(sizeBytes: number, at: number, length: number, where: string, what: string): void {
  if (at < 0 || length < 0 || at + length > sizeBytes) throw truncated(where, what, at + length, sizeBytes);
}

export function truncated(where: string, what: string, needed?: number, found?: number): IpaError {
  const sizes = needed === undefined ? '' : ` (needs ${needed} bytes, found ${found})`;
  return new IpaError('MACHO_TRUNCATED', `Expected ${where} to hold ${what}, found it cut short${sizes}.`);
}

/** Offsets and sizes are u64 in 64-bit structures; anything past 2^53 cannot lie inside a Buffer. */
export function toSafeNumber(value: bigint, where: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new IpaError('MACHO_TRUNCATED', `Expected offsets in ${where} to fit the file, found ${value}.`);
  }
  return Number(value);
}

/** An lc_str: a string at `offset` (read at `fieldAt`) from the command start, NUL-terminated within cmdsize. */
export function readCommandString(command: Buffer, fieldAt: number, minSize: number, where: string): string {
  need(command, 0, minSize, where, 'a load command string');
  const offset = command.readUInt32LE(fieldAt);
  if (offset < minSize || offset >= command.length) {
    throw new IpaError(
      'MACHO_TRUNCATED',
      `Expected a string inside a ${command.length}-byte load command of ${where}, found offset ${offset}.`,
    );
  }
  const nul = command.indexOf(0, offset);
  return command.toString('utf8', offset, nul === -1 ? command.length : nul);
}

/** A char[length] field such as segname: NUL-padded, not necessarily NUL-terminated. */
export function readFixedString(bytes: Buffer, at: number, length: number): string {
  const raw = bytes.subarray(at, at + length);
  const nul = raw.indexOf(0);
  return raw.toString('latin1', 0, nul === -1 ? length : nul);
}

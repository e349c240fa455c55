export { isMachO, isMachOHead, parseMachO, readMachO } from './parse.js';
export type {
  DylibReference,
  LoadCommand,
  MachOFile,
  MachOReadOptions,
  MachOSlice,
  Segment,
} from './parse.js';
// Random access to a Mach-O's bytes, which readMachO reads through.
export { bufferReader, streamReader } from './reader.js';
export type { ByteReader } from './reader.js';
export { readCodeSignature, readSuperBlobIndex, SUPERBLOB_MAGIC } from './code-signature.js';
export type { SignatureBlob } from './code-signature.js';
export { archName } from './arch.js';
export { addDylibLoad, rewriteDylibPath } from './inject.js';
export type { DylibLoad } from './inject.js';
export { rebuildMachO } from './rebuild.js';
export type { SliceTransform } from './rebuild.js';

export { isMachO, isMachOHead, parseMachO } from './parse.js';
export type { DylibReference, LoadCommand, MachOFile, MachOSlice, Segment } from './parse.js';
export { readCodeSignature, readSuperBlobIndex, SUPERBLOB_MAGIC } from './code-signature.js';
export type { SignatureBlob } from './code-signature.js';
export { archName } from './arch.js';
export { addDylibLoad, rewriteDylibPath } from './inject.js';
export type { DylibLoad } from './inject.js';
export { rebuildMachO } from './rebuild.js';
export type { SliceTransform } from './rebuild.js';

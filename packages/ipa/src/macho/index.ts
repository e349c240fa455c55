export { isMachOHead, parseMachO } from './parse.js';
export type { DylibReference, MachOFile, MachOSlice, Segment } from './parse.js';
export { archName } from './arch.js';
export { addDylibLoad, rewriteDylibPath } from './inject.js';
export type { DylibLoad } from './inject.js';
export { rebuildMachO } from './rebuild.js';

export { isMachOHead, parseMachO } from './parse.js';
export type { DylibReference, MachOFile, MachOSlice, Segment } from './parse.js';
export { archName } from './arch.js';

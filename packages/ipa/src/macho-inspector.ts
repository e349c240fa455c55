import { isMachOHead, parseMachO } from './macho/index.js';

/** What check() needs from Mach-O parsing; replaceable in tests. */
export interface MachOInspector {
  /** Decides from the first 8 bytes whether an entry is Mach-O code. */
  isMachO(firstBytes: Buffer): boolean;
  /** Every slice's architecture and cryptid (0 when it has no encryption command). */
  readSlices(bytes: Buffer, path: string): { arch: string; cryptid: number }[];
}

export const defaultMachOInspector: MachOInspector = {
  isMachO: isMachOHead,
  readSlices: (bytes, path) => parseMachO(bytes, path).slices.map(({ arch, cryptid }) => ({ arch, cryptid })),
};

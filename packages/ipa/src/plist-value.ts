/**
 * The values a property list holds, apart from reading and writing them, so the readers
 * (plist.ts) and the XML writer (plist-xml-writer.ts) share them without importing each other.
 */

/** Data values are Buffers from bplist-parser and Uint8Arrays from plist's XML parser. */
export type PlistValue = string | number | boolean | Date | Uint8Array | PlistValue[] | PlistObject;
export interface PlistObject {
  [key: string]: PlistValue;
}

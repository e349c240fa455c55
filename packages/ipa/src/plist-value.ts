/**
 * A property list's values, as the parsers give them and the writers take them: data values are
 * Buffers from bplist-parser and Uint8Arrays from plist's XML parser.
 */
export type PlistValue = string | number | boolean | Date | Uint8Array | PlistValue[] | PlistObject;
export interface PlistObject {
  [key: string]: PlistValue;
}

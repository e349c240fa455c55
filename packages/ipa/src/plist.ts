import { DOMParser } from '@xmldom/xmldom';
import { parseBuffer } from 'bplist-parser';
import bplistCreator from 'bplist-creator';
import { parse as parseXml } from 'plist';
import { IpaError } from './errors.js';
import { writeXmlPlist } from './plist-xml-writer.js';
import type { PlistObject, PlistValue } from './plist-value.js';

export type { PlistObject, PlistValue } from './plist-value.js';

// Binary plists start with "bplist00" (CFBinaryPList.c); anything else is tried as XML.
const BINARY_MAGIC = Buffer.from('bplist00', 'latin1');

export function isBinaryPlist(bytes: Buffer): boolean {
  return bytes.length >= BINARY_MAGIC.length && bytes.subarray(0, BINARY_MAGIC.length).equals(BINARY_MAGIC);
}

/** Parses an XML or binary property list. `what` names the file in error messages. */
export function parsePlist(bytes: Buffer, what = 'property list'): PlistValue {
  if (isBinaryPlist(bytes)) {
    try {
      const [root] = parseBuffer<PlistValue>(bytes);
      if (root === undefined || root === null) throw new Error('no root object');
      return root;
    } catch (err) {
      throw new IpaError('PLIST_INVALID', `Expected ${what} to be a valid binary plist: ${describe(err)}.`, {
        cause: err,
      });
    }
  }
  const encoding = xmlEncodingOf(bytes);
  // Lenient on the first bytes only, to tell "not a plist at all" from "a damaged XML plist".
  if (!new TextDecoder(encoding).decode(bytes.subarray(0, 64)).trimStart().startsWith('<')) {
    const found = bytes.length === 0 ? 'an empty file' : `bytes 0x${bytes.subarray(0, 8).toString('hex')}`;
    throw new IpaError('PLIST_INVALID', `Expected ${what} to be an XML or binary plist, found ${found}.`);
  }
  const text = decodeXmlText(bytes, encoding, what);
  try {
    assertWellFormedXml(text);
    const root = parseXml(text) as PlistValue;
    if (root === undefined || root === null) throw new Error('no root object');
    return root;
  } catch (err) {
    throw new IpaError('PLIST_INVALID', `Expected ${what} to be a valid XML plist: ${describe(err)}.`, {
      cause: err,
    });
  }
}

/** Parses a plist whose root must be a dictionary (Info.plist, entitlements, profiles). */
export function parsePlistDict(bytes: Buffer, what = 'property list'): PlistObject {
  const root = parsePlist(bytes, what);
  if (!isPlistDict(root)) {
    throw new IpaError('PLIST_INVALID', `Expected ${what} to hold a dictionary, found ${kindOf(root)}.`);
  }
  return root;
}

/** XML plist text, in the plist package's layout (written directly: see plist-xml-writer.ts). */
export function buildXmlPlist(value: PlistValue): string {
  return writeXmlPlist(value);
}

export function buildBinaryPlist(value: PlistObject | PlistValue[]): Buffer {
  return bplistCreator(value);
}

export function isPlistDict(value: unknown): value is PlistObject {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Uint8Array) &&
    !(value instanceof Date)
  );
}

/** A string value of a dict, or undefined when absent or of another type. */
export function readString(dict: PlistObject, key: string): string | undefined {
  const value = dict[key];
  return typeof value === 'string' ? value : undefined;
}

/** XML plists are UTF-8 in practice; UTF-16 ones carry a byte order mark. */
function xmlEncodingOf(bytes: Buffer): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'utf-16le';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'utf-16be';
  return 'utf-8';
}

function decodeXmlText(bytes: Buffer, encoding: string, what: string): string {
  try {
    // ignoreBOM: false strips the mark itself.
    return new TextDecoder(encoding, { fatal: true }).decode(bytes);
  } catch (err) {
    throw new IpaError(
      'PLIST_INVALID',
      `Expected ${what} to be text in ${encoding.toUpperCase()}, found bytes that are not.`,
      {
        cause: err,
      },
    );
  }
}

/**
 * plist's parser lets xmldom print malformed-XML reports to the console before it throws; checking
 * first with an onError that throws keeps a CLI's stderr to our one sentence.
 */
function assertWellFormedXml(text: string): void {
  new DOMParser({
    onError: (level, message) => {
      if (level !== 'warning') throw new Error(message.trim());
    },
  }).parseFromString(text, 'text/xml');
}

function kindOf(value: PlistValue): string {
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return 'data';
  if (value instanceof Date) return 'a date';
  return `a ${typeof value}`;
}

function describe(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\.$/, '');
}

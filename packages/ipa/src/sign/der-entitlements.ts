/**
 * DER entitlements (special slot 7, required from iOS 15): CoreEntitlements' encoding of the plist,
 *   [APPLICATION 16] { INTEGER 1, [CONTEXT 16] dict }
 * where a dict is a [CONTEXT 16] of SEQUENCE { UTF8String key, value } in key order, an array a
 * SEQUENCE, a string a UTF8String, a boolean a BOOLEAN and a number an INTEGER.
 */
import { IpaError } from '../errors.js';
import { isPlistDict, type PlistObject, type PlistValue } from '../plist.js';

const BOOLEAN = 0x01;
const INTEGER = 0x02;
const UTF8_STRING = 0x0c;
const SEQUENCE = 0x30;
const CONTEXT_16 = 0xb0; // context-specific, constructed, tag 16
const APPLICATION_16 = 0x70; // application, constructed, tag 16

function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), length(content.length), content]);
}

function integer(value: number): Buffer {
  // Minimal two's complement, big-endian.
  let big = BigInt(value);
  const bytes: number[] = [];
  do {
    bytes.unshift(Number(big & 0xffn));
    big >>= 8n;
  } while (!((big === 0n && (bytes[0]! & 0x80) === 0) || (big === -1n && (bytes[0]! & 0x80) !== 0)));
  return tlv(INTEGER, Buffer.from(bytes));
}

function encodeValue(value: PlistValue, path: string): Buffer {
  if (typeof value === 'string') return tlv(UTF8_STRING, Buffer.from(value, 'utf8'));
  if (typeof value === 'boolean') return tlv(BOOLEAN, Buffer.from([value ? 0xff : 0x00]));
  if (typeof value === 'number' && Number.isInteger(value)) return integer(value);
  if (Array.isArray(value))
    return tlv(SEQUENCE, Buffer.concat(value.map((item, i) => encodeValue(item, `${path}[${i}]`))));
  if (isPlistDict(value)) return encodeDict(value, path);
  throw new IpaError(
    'ENTITLEMENTS_INVALID',
    `Expected entitlement ${path} to be a string, boolean, integer, array or dictionary, found ${value instanceof Date ? 'a date' : typeof value}.`,
  );
}

function encodeDict(dict: PlistObject, path: string): Buffer {
  const keys = Object.keys(dict).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const pairs = keys.map((key) =>
    tlv(
      SEQUENCE,
      Buffer.concat([
        tlv(UTF8_STRING, Buffer.from(key, 'utf8')),
        encodeValue(dict[key]!, path === '' ? key : `${path}.${key}`),
      ]),
    ),
  );
  return tlv(CONTEXT_16, Buffer.concat(pairs));
}

export function encodeDerEntitlements(entitlements: PlistObject): Buffer {
  return tlv(APPLICATION_16, Buffer.concat([integer(1), encodeDict(entitlements, '')]));
}

/**
 * Writes XML property lists directly as text, in the layout of the plist package's builder
 * (two-space indent, Apple's DOCTYPE). Building a DOM first costs about 90 MB and 0.7 s for the
 * CodeResources of a 15,000-file app; this costs a few MB and milliseconds.
 */
import { IpaError } from './errors.js';
import type { PlistValue } from './plist-value.js';

export const XML_PLIST_HEADER =
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n' +
  '<plist version="1.0">\n';

// Characters XML 1.0 cannot carry at all (its Char production, 2.2), even escaped: matching them is the point.
const ILLEGAL =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function escapeXmlText(text: string): string {
  if (ILLEGAL.test(text)) {
    throw new IpaError(
      'PLIST_INVALID',
      `Expected plist text XML can hold, found a control character in ${JSON.stringify(text.slice(0, 40))}.`,
    );
  }
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function writeXmlPlist(value: PlistValue): string {
  const out: string[] = [XML_PLIST_HEADER];
  writeXmlPlistValue(value, '  ', out);
  out.push('</plist>');
  return out.join('');
}

/** An element with text, self-closed when the text is empty, as xmlbuilder writes it. */
const element = (indent: string, tag: string, text: string): string =>
  text === '' ? `${indent}<${tag}/>\n` : `${indent}<${tag}>${text}</${tag}>\n`;

/** Appends one value's lines, each starting with `indent`, to `out`. */
export function writeXmlPlistValue(value: PlistValue, indent: string, out: string[]): void {
  if (typeof value === 'string') {
    out.push(element(indent, 'string', escapeXmlText(value)));
  } else if (typeof value === 'number') {
    out.push(
      Number.isInteger(value) ? `${indent}<integer>${value}</integer>\n` : `${indent}<real>${value}</real>\n`,
    );
  } else if (typeof value === 'boolean') {
    out.push(`${indent}<${value}/>\n`);
  } else if (value instanceof Date) {
    out.push(`${indent}<date>${value.toISOString().replace(/\.\d{3}Z$/, 'Z')}</date>\n`);
  } else if (value instanceof Uint8Array) {
    out.push(
      element(
        indent,
        'data',
        Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'),
      ),
    );
  } else if (Array.isArray(value)) {
    if (value.length === 0) return void out.push(`${indent}<array/>\n`);
    out.push(`${indent}<array>\n`);
    for (const item of value) writeXmlPlistValue(item, `${indent}  `, out);
    out.push(`${indent}</array>\n`);
  } else if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).filter((key) => value[key] !== undefined);
    if (keys.length === 0) return void out.push(`${indent}<dict/>\n`);
    out.push(`${indent}<dict>\n`);
    for (const key of keys) {
      out.push(element(`${indent}  `, 'key', escapeXmlText(key)));
      writeXmlPlistValue(value[key]!, `${indent}  `, out);
    }
    out.push(`${indent}</dict>\n`);
  } else {
    throw new IpaError(
      'PLIST_INVALID',
      `Expected a plist value, found ${value === null ? 'null' : typeof value}.`,
    );
  }
}

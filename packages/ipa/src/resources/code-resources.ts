import { escapeXmlText, writeXmlPlistValue, XML_PLIST_HEADER } from '../plist-xml-writer.js';
import { matchRule, rulesPlist, RULES_V1, RULES_V2, type ResourceRule } from './rules.js';

/** A resource file of a bundle, by its path relative to the bundle root, with its digests. */
export interface SealedFile {
  path: string;
  sha1: Buffer;
  sha256: Buffer;
}

/** Nested code (a framework, app extension, watch app or standalone dylib) sealed by its cdhash. */
export interface SealedNested {
  /** e.g. 'Frameworks/Foo.framework' or 'Frameworks/libfoo.dylib' */
  path: string;
  /** The nested code's primary CodeDirectory hash (20 bytes, truncated as codesign does). */
  cdhash: Buffer;
  /** Its designated requirement, in requirement-language text. */
  requirement: string;
}

/** True when `path` lies inside one of the nested code paths (their own signatures seal it). */
const insideNested = (path: string, nested: readonly SealedNested[]) =>
  nested.some((n) => path.startsWith(`${n.path}/`));

/**
 * `_CodeSignature/CodeResources` of one bundle. `files` must not contain the bundle's own main
 * executable or its `_CodeSignature/` (codesign never seals those as resources).
 *
 * Written straight to bytes, in exactly the layout writeXmlPlist gives the equivalent plist
 * object (keys in a JS object's order: integer-like keys first, ascending, then in sorted order):
 * a tree of objects and strings for 15,000 files would hold some 35 MB at once.
 */
export function buildCodeResources(
  files: readonly SealedFile[],
  nested: readonly SealedNested[] = [],
): Buffer {
  return writeCodeResources(files, nested).bytes;
}

/**
 * CodeResources with the places of some paths' entries marked: the rest of the bytes stay the same
 * from one sign of a version to the next (the same resources, the same digests), so the next sign
 * fills in only the marked entries (fillSealTemplate) instead of laying out thousands again.
 */
export interface SealTemplate {
  /** The bytes without the marked entries. */
  body: Buffer;
  /** Each marked entry: where in `body` it goes, in which seal, and whose. */
  slots: SealSlot[];
}

export interface SealSlot {
  at: number;
  seal: 'files' | 'files2';
  path: string;
}

/** CodeResources as buildCodeResources writes it, and its template with the `variable` paths' entries marked. */
export function buildSealTemplate(
  files: readonly SealedFile[],
  nested: readonly SealedNested[],
  variable: ReadonlySet<string>,
): { bytes: Buffer; template: SealTemplate } {
  const { bytes, slots } = writeCodeResources(files, nested, variable);
  const body: Buffer[] = [];
  const moved: SealSlot[] = [];
  let from = 0;
  let bodyBytes = 0;
  for (const slot of slots) {
    body.push(bytes.subarray(from, slot.start));
    bodyBytes += slot.start - from;
    moved.push({ at: bodyBytes, seal: slot.seal, path: slot.path });
    from = slot.end;
  }
  body.push(bytes.subarray(from));
  return { bytes, template: { body: Buffer.concat(body), slots: moved } };
}

/**
 * The CodeResources the template was made for, with the marked entries written from `files` and
 * `nested` (only those paths are read); undefined when one of them is not there.
 */
export function fillSealTemplate(
  template: SealTemplate,
  files: ReadonlyMap<string, SealedFile>,
  nested: ReadonlyMap<string, SealedNested>,
): Buffer | undefined {
  const pieces: Buffer[] = [];
  let from = 0;
  for (const slot of template.slots) {
    let entry: string | undefined;
    if (slot.seal === 'files') {
      const file = files.get(slot.path);
      const rule = matchRule(RULES_V1, slot.path);
      if (file !== undefined && rule !== undefined) entry = filesEntry(file, rule);
    } else {
      const code = nested.get(slot.path);
      const file = files.get(slot.path);
      const rule = matchRule(RULES_V2, slot.path);
      if (code !== undefined) entry = files2Entry({ path: slot.path, code });
      else if (file !== undefined && rule !== undefined) entry = files2Entry({ path: slot.path, file, rule });
    }
    if (entry === undefined) return undefined;
    pieces.push(template.body.subarray(from, slot.at), Buffer.from(entry, 'utf8'));
    from = slot.at;
  }
  pieces.push(template.body.subarray(from));
  return Buffer.concat(pieces);
}

type Seal2 = { path: string; file?: SealedFile; rule?: ResourceRule; code?: SealedNested };

const filesEntry = (file: SealedFile, v1: ResourceRule): string =>
  v1.optional
    ? `      <key>${escapeXmlText(file.path)}</key>\n      <dict>\n        <key>hash</key>\n        <data>${base64(file.sha1)}</data>\n        <key>optional</key>\n        <true/>\n      </dict>\n`
    : `      <key>${escapeXmlText(file.path)}</key>\n      <data>${base64(file.sha1)}</data>\n`;

function files2Entry(seal: Seal2): string {
  let text = `      <key>${escapeXmlText(seal.path)}</key>\n      <dict>\n`;
  if (seal.code !== undefined) {
    const requirement = escapeXmlText(seal.code.requirement);
    text += `        <key>cdhash</key>\n        <data>${base64(seal.code.cdhash)}</data>\n`;
    text +=
      requirement === ''
        ? '        <key>requirement</key>\n        <string/>\n'
        : `        <key>requirement</key>\n        <string>${requirement}</string>\n`;
  } else {
    text += `        <key>hash</key>\n        <data>${base64(seal.file!.sha1)}</data>\n        <key>hash2</key>\n        <data>${base64(seal.file!.sha256)}</data>\n`;
    if (seal.rule!.optional) text += '        <key>optional</key>\n        <true/>\n';
  }
  return `${text}      </dict>\n`;
}

/** The whole layout; the byte ranges of the `variable` paths' entries are answered as slots. */
function writeCodeResources(
  files: readonly SealedFile[],
  nested: readonly SealedNested[],
  variable?: ReadonlySet<string>,
): { bytes: Buffer; slots: Array<{ start: number; end: number; seal: SealSlot['seal']; path: string }> } {
  const slots: Array<{ start: number; end: number; seal: SealSlot['seal']; path: string }> = [];
  const out = createTextBuffer();
  const entry = (seal: SealSlot['seal'], path: string, text: string) => {
    const start = out.length;
    out.write(text);
    if (variable?.has(path)) slots.push({ start, end: out.length, seal, path });
  };
  const sorted = inObjectKeyOrder(
    [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
  );
  out.write(`${XML_PLIST_HEADER}  <dict>\n    <key>files</key>\n`);
  let any = false;
  for (const file of sorted) {
    const v1 = matchRule(RULES_V1, file.path);
    if (!v1 || v1.omit) continue;
    if (!any) out.write('    <dict>\n');
    any = true;
    entry('files', file.path, filesEntry(file, v1));
  }
  out.write(any ? '    </dict>\n' : '    <dict/>\n');

  // files2: resources outside nested code, then nested code by cdhash, all in key order.
  const seals: Seal2[] = [];
  for (const file of files) {
    if (insideNested(file.path, nested)) continue;
    const v2 = matchRule(RULES_V2, file.path);
    if (!v2 || v2.omit) continue;
    seals.push({ path: file.path, file, rule: v2 });
  }
  // A nested code path replaces a file of the same path, as assigning it to the object would.
  const codePaths = new Set(nested.map((code) => code.path));
  const seals2 = seals.filter((seal) => !codePaths.has(seal.path));
  for (const code of nested) seals2.push({ path: code.path, code });
  const ordered = inObjectKeyOrder(seals2.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)));
  out.write('    <key>files2</key>\n');
  out.write(ordered.length === 0 ? '    <dict/>\n' : '    <dict>\n');
  for (const seal of ordered) entry('files2', seal.path, files2Entry(seal));
  if (ordered.length > 0) out.write('    </dict>\n');
  out.write(RULES_TEXT);
  out.write('  </dict>\n</plist>');
  return { bytes: out.done(), slots };
}

// The rules never change: laid out once.
const RULES_TEXT = (() => {
  const lines: string[] = ['    <key>rules</key>\n'];
  writeXmlPlistValue(rulesPlist(RULES_V1), '    ', lines);
  lines.push('    <key>rules2</key>\n');
  writeXmlPlistValue(rulesPlist(RULES_V2), '    ', lines);
  return lines.join('');
})();

/** An empty Buffer's base64 is '', which writeXmlPlist self-closes; digests are never empty. */
const base64 = (bytes: Buffer): string => bytes.toString('base64');

/**
 * The order a JS object gives these keys when they are inserted in the order given: canonical
 * array indices (integer-like, under 2^32 - 1) first, ascending, then the rest as they come.
 */
function inObjectKeyOrder<T extends { path: string }>(items: T[]): T[] {
  const isIndex = (key: string) => /^(0|[1-9]\d*)$/.test(key) && Number(key) < 4294967295;
  const indices = items.filter((item) => isIndex(item.path)).sort((a, b) => Number(a.path) - Number(b.path));
  if (indices.length === 0) return items;
  return [...indices, ...items.filter((item) => !isIndex(item.path))];
}

/** UTF-8 text gathered in 64 KiB pieces, joined once at the end; `length` is the bytes so far. */
function createTextBuffer() {
  const PIECE_BYTES = 64 * 1024;
  const pieces: Buffer[] = [];
  let current = Buffer.allocUnsafe(PIECE_BYTES);
  let used = 0;
  let before = 0;
  return {
    get length(): number {
      return before + used;
    },
    write(text: string): void {
      if (used + text.length * 3 > current.length) {
        pieces.push(current.subarray(0, used));
        before += used;
        current = Buffer.allocUnsafe(Math.max(PIECE_BYTES, text.length * 3));
        used = 0;
      }
      used += current.write(text, used, 'utf8');
    },
    done(): Buffer {
      pieces.push(current.subarray(0, used));
      return Buffer.concat(pieces);
    },
  };
}

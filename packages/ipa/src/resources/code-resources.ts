import { buildXmlPlist, type PlistObject, type PlistValue } from '../plist.js';
import { matchRule, rulesPlist, RULES_V1, RULES_V2 } from './rules.js';

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
const insideNested = (path: string, nested: readonly SealedNested[]) => nested.some((n) => path.startsWith(`${n.path}/`));

/**
 * `_CodeSignature/CodeResources` of one bundle. `files` must not contain the bundle's own main
 * executable or its `_CodeSignature/` (codesign never seals those as resources).
 */
export function buildCodeResources(files: readonly SealedFile[], nested: readonly SealedNested[] = []): Buffer {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const files1: PlistObject = {};
  const files2: PlistObject = {};
  for (const file of sorted) {
    const v1 = matchRule(RULES_V1, file.path);
    if (v1 && !v1.omit) files1[file.path] = v1.optional ? { hash: file.sha1, optional: true } : file.sha1;
    if (insideNested(file.path, nested)) continue;
    const v2 = matchRule(RULES_V2, file.path);
    if (!v2 || v2.omit) continue;
    const entry: PlistObject = { hash: file.sha1, hash2: file.sha256 };
    if (v2.optional) entry.optional = true;
    files2[file.path] = entry;
  }
  for (const code of nested) files2[code.path] = { cdhash: code.cdhash, requirement: code.requirement };
  const plist: Record<string, PlistValue> = {
    files: files1,
    files2: sortKeys(files2),
    rules: rulesPlist(RULES_V1),
    rules2: rulesPlist(RULES_V2),
  };
  return Buffer.from(buildXmlPlist(plist), 'utf8');
}

function sortKeys(object: PlistObject): PlistObject {
  return Object.fromEntries(Object.keys(object).sort().map((k) => [k, object[k]!]));
}

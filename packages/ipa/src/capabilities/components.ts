/**
 * The signed components of an app as it came from the store, and the entitlements each was signed
 * with: the app, its app extensions, watch app and App Clip, and nested frameworks. Signing finds
 * the same bundles (sign-ipa/plan.ts) and keeps each main executable's own entitlements as far as
 * the profile grants them, so what a re-sign keeps or loses follows from these (report.ts).
 *
 * Only each bundle's Info.plist, the first bytes of its executable and its code signature are read:
 * a large executable is inflated up to its signature and no further, never held whole.
 */
import { posix } from 'node:path';
import type { PlistObject, PlistValue } from '../plist.js';
import { readEmbeddedEntitlementsAt } from '../sign/read-signature.js';
import { planSigning, type BundlePlan } from '../sign-ipa/plan.js';
import type { ZipArchive, ZipEntry } from '../zip/index.js';

/** What a component is to the person who installs the app. */
export type ComponentKind = 'app' | 'app-extension' | 'watch-app' | 'app-clip' | 'framework' | 'bundle';

/** Entitlement values as JSON holds them: dates become ISO strings, data is left out. */
export type EntitlementValue =
  string | number | boolean | EntitlementValue[] | { [key: string]: EntitlementValue };
export type Entitlements = Record<string, EntitlementValue>;

export interface SignedComponent {
  /** The bundle's folder inside the app ('' for the app itself, 'PlugIns/Share.appex'). */
  readonly path: string;
  readonly kind: ComponentKind;
  readonly bundleId: string;
  /** CFBundleDisplayName, else CFBundleName, else the folder's name. */
  readonly name: string;
  /** An app extension's NSExtensionPointIdentifier ('com.apple.share-services'). */
  readonly extensionPoint?: string;
  /** What its executable was signed with; null when it carries none (or no executable, or none readable). */
  readonly entitlements: Entitlements | null;
}

/** Load commands sit in the first pages; a head this large covers them in one read. */
const HEAD_BYTES = 256 * 1024;

/** The app's components, the app first, then the others by path. */
export async function readSignedComponents(archive: ZipArchive): Promise<SignedComponent[]> {
  const plan = await planSigning(archive);
  const components: SignedComponent[] = [];
  for (const bundle of plan.inOrder) {
    const executable = bundle.executable === undefined ? undefined : archive.find(bundle.executable);
    const own =
      executable === undefined || executable.isDirectory || executable.isSymlink
        ? undefined
        : await entitlementsOf(archive, executable);
    const path = bundle.dir === plan.app.dir ? '' : bundle.dir.slice(plan.app.dir.length + 1);
    const extensionPoint = extensionPointOf(bundle.info);
    components.push({
      path,
      kind: kindOf(bundle, path),
      bundleId: bundle.bundleId,
      name: nameOf(bundle),
      ...(extensionPoint === undefined ? {} : { extensionPoint }),
      entitlements: own === undefined ? null : toJson(own),
    });
  }
  return components.sort((a, b) => (a.path === '' ? -1 : b.path === '' ? 1 : a.path < b.path ? -1 : 1));
}

function kindOf(bundle: BundlePlan, path: string): ComponentKind {
  if (bundle.kind === 'appex') return 'app-extension';
  if (bundle.kind === 'app' && path !== '') {
    if (/(^|\/)Watch\//.test(path)) return 'watch-app';
    if (/(^|\/)AppClips\//.test(path)) return 'app-clip';
  }
  return bundle.kind;
}

function nameOf(bundle: BundlePlan): string {
  for (const key of ['CFBundleDisplayName', 'CFBundleName']) {
    const value = bundle.info[key];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return posix.basename(bundle.dir).replace(/\.[^.]+$/, '');
}

function extensionPointOf(info: PlistObject): string | undefined {
  const extension = info.NSExtension;
  if (extension === undefined || typeof extension !== 'object' || Array.isArray(extension)) return undefined;
  const point = (extension as PlistObject).NSExtensionPointIdentifier;
  return typeof point === 'string' ? point : undefined;
}

/** The entitlements an executable was signed with; a damaged signature counts as none, as signing treats it. */
async function entitlementsOf(archive: ZipArchive, entry: ZipEntry): Promise<PlistObject | undefined> {
  const head = await archive.readEntryHead(entry, HEAD_BYTES);
  const read = (offset: number, length: number) =>
    offset + length <= head.length
      ? Promise.resolve(head.subarray(offset, offset + length))
      : readRange(archive, entry, offset, length);
  try {
    return await readEmbeddedEntitlementsAt(read, entry.uncompressedSizeBytes, entry.name);
  } catch {
    return undefined;
  }
}

/** Inflates the entry up to the end of the range and keeps only the range. */
async function readRange(
  archive: ZipArchive,
  entry: ZipEntry,
  offset: number,
  length: number,
): Promise<Buffer> {
  const stream = await archive.openEntryStream(entry);
  const parts: Buffer[] = [];
  let position = 0;
  const end = offset + length;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const next = position + chunk.length;
    if (next > offset)
      parts.push(chunk.subarray(Math.max(0, offset - position), Math.min(chunk.length, end - position)));
    position = next;
    if (position >= end) break;
  }
  stream.destroy();
  return Buffer.concat(parts);
}

function toJson(dict: PlistObject): Entitlements {
  const out: Entitlements = {};
  for (const [key, value] of Object.entries(dict)) {
    const json = valueToJson(value);
    if (json !== undefined) out[key] = json;
  }
  return out;
}

function valueToJson(value: PlistValue): EntitlementValue | undefined {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return undefined;
  if (Array.isArray(value))
    return value.map(valueToJson).filter((v): v is EntitlementValue => v !== undefined);
  return toJson(value);
}

import { posix } from 'node:path';
import { IpaError } from '../errors.js';

/**
 * Refuses names that would write outside the extraction directory. yauzl's own check throws a
 * plain Error; this one gives each reason its code. Backslashes were already turned into slashes
 * by yauzl's getFileNameLowLevel (non-strict mode), so `..\x` is caught as `../x`.
 */
export function assertSafeEntryName(name: string): void {
  if (name.length === 0) {
    throw new IpaError('ZIP_INVALID', 'Expected every entry to have a name, found an empty one.');
  }
  if (name.startsWith('/') || /^[a-zA-Z]:/.test(name)) {
    throw new IpaError(
      'ZIP_ABSOLUTE_PATH',
      `Expected relative entry names, found the absolute path "${name}".`,
    );
  }
  if (name.split('/').includes('..')) {
    throw new IpaError(
      'ZIP_SLIP',
      `Expected entry names to stay inside the archive, found "${name}" which climbs out with "..".`,
    );
  }
  if (name.includes('\0')) {
    throw new IpaError('ZIP_INVALID', `Expected entry names without NUL bytes, found ${JSON.stringify(name)}.`);
  }
}

/** "a/b/" and "a/b" name the same path on disk. */
export function normalizeEntryKey(name: string): string {
  return name.endsWith('/') ? name.slice(0, -1) : name;
}

/** The `Payload/<Name>.app` directory that contains `name`, or undefined when it is outside one. */
export function enclosingAppDir(name: string): string | undefined {
  const parts = name.split('/');
  if (parts.length >= 3 && parts[0] === 'Payload' && parts[1]?.endsWith('.app')) {
    return `Payload/${parts[1]}`;
  }
  return undefined;
}

/**
 * Whether a symlink at `linkName` pointing at `target` stays inside `rootDir` ('' for the archive
 * root). The target is resolved relative to the link's own directory, as the kernel does.
 */
export function isSymlinkTargetInside(linkName: string, target: string, rootDir: string): boolean {
  if (target.length === 0 || target.startsWith('/') || target.includes('\0')) return false;
  const resolved = posix.normalize(posix.join(posix.dirname(normalizeEntryKey(linkName)), target));
  if (resolved === '..' || resolved.startsWith('../')) return false;
  if (rootDir === '') return true;
  return resolved === rootDir || resolved.startsWith(`${rootDir}/`);
}

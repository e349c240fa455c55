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
    throw new IpaError(
      'ZIP_INVALID',
      `Expected entry names without NUL bytes, found ${JSON.stringify(name)}.`,
    );
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

// Linux's limit on symlinks followed in one lookup (MAXSYMLINKS); beyond it the kernel gives ELOOP.
const MAX_SYMLINK_HOPS = 40;

/**
 * Where a symlink at `linkName` ends up, following other symlinks of the archive on the way as the
 * kernel would once extracted (a lexical check alone misses `a -> ..` followed by `b -> a/../..`).
 * Undefined when it climbs above the archive root, is absolute, or loops.
 */
export function resolveSymlink(linkName: string, symlinks: ReadonlyMap<string, string>): string | undefined {
  const current = normalizeEntryKey(linkName).split('/').slice(0, -1);
  const pending = [...(symlinks.get(normalizeEntryKey(linkName)) ?? '').split('/')];
  if (pending.length === 0 || pending[0] === '' || pending.join('/').includes('\0')) return undefined;
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (current.length === 0) return undefined;
      current.pop();
      continue;
    }
    current.push(part);
    const target = symlinks.get(current.join('/'));
    if (target === undefined) continue;
    hops += 1;
    if (hops > MAX_SYMLINK_HOPS || target === '' || target.startsWith('/')) return undefined;
    current.pop();
    pending.unshift(...target.split('/'));
  }
  return current.join('/');
}

/** Whether `path` is `rootDir` or inside it ('' is the archive root). */
export function isInside(path: string, rootDir: string): boolean {
  return rootDir === '' || path === rootDir || path.startsWith(`${rootDir}/`);
}

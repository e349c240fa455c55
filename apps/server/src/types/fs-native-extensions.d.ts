// The part of fs-native-extensions (holepunchto) that Sideport uses; the package ships no types.
declare module 'fs-native-extensions' {
  /** An exclusive (or, with shared, a shared) lock on the whole file; false when another holds it. */
  export function tryLock(fd: number, options?: { shared?: boolean }): boolean;
  export function unlock(fd: number): void;
}

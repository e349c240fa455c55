export { openZip, openZipFromBuffer, openZipFromReader } from './archive.js';
export type { ZipArchive, ZipEntry, OpenZipOptions, OpenEntryOptions } from './archive.js';
export { centralFieldsOf } from './archive.js';
export type { CentralFields } from './archive.js';
export { defaultZipLimits, resolveZipLimits } from './limits.js';
export type { ZipLimits } from './limits.js';

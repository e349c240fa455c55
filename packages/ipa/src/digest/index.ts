export { digestEntries } from './pool.js';
export type { DigestOptions, FileDigests } from './pool.js';
export { digestEntriesCached, readCachedDigests, versionKey, writeCachedDigests } from './cache.js';
export type { CachedDigestOptions } from './cache.js';

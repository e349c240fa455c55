import path from 'node:path';
import { createLocalStore, parseStorageUrl, type FileStore } from './storage.js';

/**
 * The store STORAGE_URL names, else the data folder's `files/`. The AWS SDK is loaded only for an
 * S3 store: it costs every start a third of a second of CPU and some 25 MB that local disk never uses.
 */
export async function createFileStore(options: {
  storageUrl?: string | undefined;
  dataDir: string;
}): Promise<FileStore> {
  if (!options.storageUrl) return createLocalStore(path.join(options.dataDir, 'files'));
  const { createS3Store } = await import('./s3-store.js');
  return createS3Store(parseStorageUrl(options.storageUrl));
}

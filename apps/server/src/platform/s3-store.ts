/**
 * The S3-compatible store (STORAGE_URL=s3://...), in a module of its own so that a server on local
 * disk never loads the AWS SDK (createFileStore in open-store.ts imports this only for an S3 URL).
 */

import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  paginateListObjectsV2,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { failWith } from './errors.js';
import { isConnectionFailure } from './faults.js';
import { checkKey, contentDisposition, isSafeKey, type FileStore, type S3Location } from './storage.js';

const PART_SIZE_BYTES = 16 * 1024 * 1024;

/**
 * Whether an S3 call failed because the store is away (refused, reset, timed out, or its own
 * 5xx/SlowDown after the SDK's retries), not because of what was asked (a missing key, access denied).
 */
export function isStoreUnavailable(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number }; cause?: unknown } | undefined;
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined && (status >= 500 || status === 429)) return true;
  if (e?.name === 'TimeoutError' || e?.name === 'RequestTimeout') return true;
  return isConnectionFailure(err) || isConnectionFailure(e?.cause);
}

/** An S3 failure as the request that met it answers: 503 STORAGE_UNAVAILABLE when the store is away. */
function asStorageFault(err: unknown): unknown {
  return isStoreUnavailable(err) ? failWith('STORAGE_UNAVAILABLE', { cause: err }) : err;
}

/** The store's calls, each answering STORAGE_UNAVAILABLE (503, Retry-After) when the store is away. */
function withStorageFaults(store: FileStore): FileStore {
  const guarded =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(...args);
      } catch (err) {
        throw asStorageFault(err);
      }
    };
  return {
    ...store,
    putFile: guarded(store.putFile),
    read: guarded(store.read),
    sizeOf: guarded(store.sizeOf),
    delete: guarded(store.delete),
    presignGet: guarded(store.presignGet),
    async *list() {
      try {
        yield* store.list();
      } catch (err) {
        throw asStorageFault(err);
      }
    },
  };
}

export function createS3Store(location: S3Location, client?: S3Client): FileStore {
  return withStorageFaults(createBareS3Store(location, client));
}

function createBareS3Store(location: S3Location, client?: S3Client): FileStore {
  const s3 =
    client ??
    new S3Client({
      region: location.region,
      forcePathStyle: location.forcePathStyle,
      ...(location.endpoint ? { endpoint: location.endpoint } : {}),
    });
  const objectKey = (key: string) => {
    checkKey(key);
    return location.prefix ? `${location.prefix}/${key}` : key;
  };
  const Bucket = location.bucket;
  return {
    kind: 's3',
    description: `S3 bucket ${location.bucket}${location.endpoint ? ` at ${location.endpoint}` : ''}`,
    async putFile(key, localPath) {
      // Multipart, streamed from disk: at most a few parts are in memory whatever the file's size.
      const upload = new Upload({
        client: s3,
        params: {
          Bucket,
          Key: objectKey(key),
          Body: createReadStream(localPath),
          ContentType: 'application/octet-stream',
        },
        partSize: PART_SIZE_BYTES,
        queueSize: 2,
      });
      await upload.done();
      await rm(localPath, { force: true });
    },
    async read(key, range) {
      const answer = await s3.send(
        new GetObjectCommand({
          Bucket,
          Key: objectKey(key),
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return answer.Body as Readable;
    },
    async sizeOf(key) {
      try {
        const head = await s3.send(new HeadObjectCommand({ Bucket, Key: objectKey(key) }));
        return head.ContentLength;
      } catch (err) {
        // Missing is undefined; a store that is away is not "missing" (the file is still there).
        if (isStoreUnavailable(err)) throw err;
        return undefined;
      }
    },
    async delete(key) {
      await s3.send(new DeleteObjectCommand({ Bucket, Key: objectKey(key) }));
    },
    localPath: () => undefined,
    async presignGet(key, { expiresInSeconds, fileName }) {
      const command = new GetObjectCommand({
        Bucket,
        Key: objectKey(key),
        ResponseContentDisposition: contentDisposition(fileName),
        ResponseContentType: 'application/octet-stream',
      });
      return getSignedUrl(s3, command, { expiresIn: expiresInSeconds });
    },
    async *list() {
      const under = location.prefix ? `${location.prefix}/` : '';
      // ListObjectsV2, a thousand keys a page, through the store's own client and credentials.
      const pages = paginateListObjectsV2({ client: s3 }, { Bucket, ...(under ? { Prefix: under } : {}) });
      for await (const page of pages) {
        for (const object of page.Contents ?? []) {
          const key = object.Key?.slice(under.length);
          if (!key || !isSafeKey(key)) continue;
          yield { key, sizeBytes: object.Size ?? 0, modifiedAt: object.LastModified ?? new Date() };
        }
      }
    },
  };
}

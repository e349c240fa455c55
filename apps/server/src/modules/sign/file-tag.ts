import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';

const contentTags = new Map<string, Promise<string>>();

/**
 * What a file holds, for "is the artifact made from this file": a SHA-256 of its content, so
 * workers on other machines with their own copy agree. Hashed once per process for each size and
 * modification time. The sign service tags a Feather request with it, the workers the artifact.
 */
export async function fileTag(file: string): Promise<string> {
  const s = await stat(file);
  const key = `${file}\0${s.size}\0${s.mtimeMs}`;
  let tag = contentTags.get(key);
  if (!tag) {
    tag = (async () => {
      const hash = createHash('sha256');
      for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
      return hash.digest('hex');
    })();
    tag.catch(() => contentTags.delete(key));
    contentTags.set(key, tag);
  }
  return tag;
}

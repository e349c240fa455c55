/** An archive entry as openZip answers it, and its central directory record (archive.ts). */
import type yauzl from 'yauzl';

export interface ZipEntry {
  /** The entry's path inside the archive, with '/' separators; directories end with '/'. */
  readonly name: string;
  readonly isDirectory: boolean;
  readonly isSymlink: boolean;
  /** Set for symlinks: the path the link points at (checked to stay inside its bundle). */
  readonly symlinkTarget?: string;
  /** Unix mode from the external attributes, or undefined when the archiver stored none. */
  readonly unixMode?: number;
  readonly compressedSizeBytes: number;
  readonly uncompressedSizeBytes: number;
  /** 0 stored, 8 deflate (APPNOTE 4.4.5). */
  readonly compressionMethod: number;
  readonly crc32: number;
  /**
   * yauzl's record, for raw copies of the compressed bytes (see ZipArchive.openEntryStream). Made
   * afresh on each read from what the entry keeps of its central directory record.
   */
  readonly source: yauzl.Entry;
}

/**
 * What an entry keeps of its central directory record (APPNOTE 4.3.12) beyond ZipEntry's fields.
 * yauzl's own record holds some 1 KB per entry in objects and buffers; an IPA's tens of thousands
 * of entries stay in memory for a whole sign.
 */
export interface CentralFields {
  readonly versionMadeBy: number;
  readonly versionNeededToExtract: number;
  readonly generalPurposeBitFlag: number;
  readonly lastModFileTime: number;
  readonly lastModFileDate: number;
  readonly internalFileAttributes: number;
  readonly externalFileAttributes: number;
  readonly relativeOffsetOfLocalHeader: number;
  /** The name's bytes as stored, when they are not its UTF-8 encoding (CP437, Unicode path field). */
  readonly fileNameRaw?: Buffer;
  /** The extra field and the comment, each only when present. */
  readonly extraFieldRaw?: Buffer;
  readonly fileCommentRaw?: Buffer;
}

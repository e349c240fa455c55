import { IpaError } from '../errors.js';

// "PK\x03\x04": the first local file header of an ordinary zip (APPNOTE 4.3.7).
const LOCAL_HEADER_SIGNATURE = 0x04034b50;
// "PK\x05\x06": end of central directory, the whole file of an empty zip (APPNOTE 4.3.16).
const END_OF_CENTRAL_DIRECTORY_SIGNATURE = 0x06054b50;

/** Whether the first bytes look like the start of a zip, so a missing end record means truncation. */
export function startsLikeZip(head: Buffer): boolean {
  if (head.length < 4) return false;
  const signature = head.readUInt32LE(0);
  return signature === LOCAL_HEADER_SIGNATURE || signature === END_OF_CENTRAL_DIRECTORY_SIGNATURE;
}

/** yauzl reports every failure as a plain Error; give each one a code and a sentence. */
export function toZipError(err: unknown, head?: Buffer): IpaError {
  if (err instanceof IpaError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (/end of central directory record signature not found/i.test(message)) {
    if (head !== undefined && startsLikeZip(head)) {
      return new IpaError(
        'ZIP_TRUNCATED',
        'Expected a zip end of central directory record, found none although the file starts like a zip: the archive is truncated.',
        { cause: err },
      );
    }
    const found =
      head === undefined || head.length === 0
        ? 'an empty file'
        : `bytes 0x${head.subarray(0, 4).toString('hex')}`;
    return new IpaError('NOT_A_ZIP', `Expected a zip archive (an IPA), found ${found}.`, { cause: err });
  }
  if (/unexpected EOF|overflows file bounds|not enough bytes|exceeds|beyond/i.test(message)) {
    return new IpaError('ZIP_TRUNCATED', `Expected more data, the archive ends early: ${message}.`, {
      cause: err,
    });
  }
  return new IpaError('ZIP_INVALID', `Expected a well-formed zip archive: ${message}.`, { cause: err });
}

import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { check, isIpaError, type CheckReport } from '@sideport/ipa';
import { AppError } from '../../platform/errors.js';

export const uploadTooLarge = (maxBytes: number) =>
  new AppError(413, 'UPLOAD_TOO_LARGE', `The IPA is larger than this server accepts (${maxBytes} bytes).`);

/**
 * Streams an upload to a new file under `dir`, never holding it in memory, and stops at
 * `maxBytes` (the declared length is checked first, then every byte counted). The partial file is
 * removed on any failure.
 */
export async function receiveToFile(body: Readable, options: { dir: string; maxBytes: number; declaredBytes?: number }) {
  if (options.declaredBytes !== undefined && options.declaredBytes > options.maxBytes) {
    body.resume();
    throw uploadTooLarge(options.maxBytes);
  }
  await mkdir(options.dir, { recursive: true });
  const file = path.join(options.dir, `upload-${randomUUID()}.ipa`);
  let sizeBytes = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      sizeBytes += chunk.length;
      if (sizeBytes > options.maxBytes) return callback(uploadTooLarge(options.maxBytes));
      callback(null, chunk);
    },
  });
  try {
    await pipeline(body, counter, createWriteStream(file));
  } catch (err) {
    await rm(file, { force: true });
    if (err instanceof AppError) throw err;
    throw new AppError(400, 'UPLOAD_INTERRUPTED', 'The upload ended before the whole file arrived.', { cause: err });
  }
  if (options.declaredBytes !== undefined && sizeBytes !== options.declaredBytes) {
    await rm(file, { force: true });
    throw new AppError(400, 'UPLOAD_INTERRUPTED', 'The upload ended before the whole file arrived.');
  }
  return { path: file, sizeBytes };
}

export type ResultCheck = { ok: true; report: CheckReport; version: string } | { ok: false; reason: string };

/**
 * DESIGN.md section 5: a result is accepted only when it is a safe archive with one app, every
 * Mach-O slice decrypted (cryptid 0) and the bundle id the app's. The reason of a refusal is a
 * sentence for the admin console and the agent's log.
 */
export async function checkResult(file: string, expected: { bundleId: string }): Promise<ResultCheck> {
  let report: CheckReport;
  try {
    report = await check(file);
  } catch (err) {
    if (isIpaError(err)) return { ok: false, reason: `The IPA is not usable: ${err.message}` };
    throw err;
  }
  if (!report.decrypted) {
    const encrypted = report.machOs
      .filter((m) => m.slices.some((s) => s.cryptid !== 0))
      .map((m) => m.path)
      .slice(0, 3);
    return { ok: false, reason: `The IPA is still encrypted (cryptid is not 0 in ${encrypted.join(', ')}).` };
  }
  if (report.bundleId !== expected.bundleId) {
    return { ok: false, reason: `The IPA is ${report.bundleId}, not the requested ${expected.bundleId}.` };
  }
  const version = report.shortVersion ?? report.bundleVersion;
  if (!version) return { ok: false, reason: 'The IPA names no version in its Info.plist.' };
  return { ok: true, report, version };
}

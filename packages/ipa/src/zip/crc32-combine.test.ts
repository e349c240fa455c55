import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { crc32Combine } from './crc32-combine.js';

describe('crc32Combine', () => {
  it('answers the CRC-32 of two pieces joined, as zlib computes it over the whole', () => {
    for (const [a, b] of [
      [0, 0],
      [1, 0],
      [0, 1],
      [7, 4096],
      [1 << 20, 3],
      [12345, (1 << 20) + 17],
    ] as const) {
      const first = randomBytes(a);
      const second = randomBytes(b);
      const joined = crc32(Buffer.concat([first, second])) >>> 0;
      expect(crc32Combine(crc32(first), crc32(second), second.length)).toBe(joined);
    }
  });

  it('combines a run of pieces in order, as the code cache joins a head, a body and a signature', () => {
    const pieces = [randomBytes(4096), randomBytes(1 << 20), randomBytes(65_537)];
    let crc = 0;
    for (const piece of pieces) crc = crc32Combine(crc, crc32(piece), piece.length);
    expect(crc).toBe(crc32(Buffer.concat(pieces)) >>> 0);
  });
});

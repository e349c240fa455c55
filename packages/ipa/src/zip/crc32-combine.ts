/**
 * The CRC-32 of two pieces joined, from each piece's CRC-32 and the second's length, without
 * reading either again (zlib's crc32_combine, which Node does not expose). A signed binary's
 * unchanged middle is copied from the code cache as deflated bytes; its CRC-32 is kept beside it
 * and combined with those of the new head and signature.
 *
 * CRC-32 is a remainder of polynomial division over GF(2): appending n zero bytes to the first
 * piece multiplies its CRC by x^(8n) modulo the polynomial, and the second piece's CRC adds in.
 */
const POLYNOMIAL = 0xedb88320; // reflected, as zip and zlib use it

/** a(x) * b(x) modulo the polynomial, both reflected. */
function multiplyModP(a: number, b: number): number {
  let product = 0;
  for (let mask = 0x80000000; mask !== 0; mask >>>= 1) {
    if ((a & mask) !== 0) product ^= b;
    b = b & 1 ? (b >>> 1) ^ POLYNOMIAL : b >>> 1;
  }
  return product >>> 0;
}

// x^(2^k) modulo the polynomial, for k = 0..31: x is 0x40000000 reflected.
const POWERS: number[] = [];
for (let p = 0x40000000, k = 0; k < 32; k++, p = multiplyModP(p, p)) POWERS.push(p);

/** x^(n * 2^k) modulo the polynomial. */
function xPowerModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  for (; n > 0; n = Math.floor(n / 2), k++) if (n % 2 === 1) p = multiplyModP(POWERS[k % 32]!, p);
  return p;
}

/** crc32(A ‖ B) from crc32(A), crc32(B) and B's length in bytes. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  if (lengthB === 0) return crcA >>> 0;
  return (multiplyModP(xPowerModP(lengthB, 3), crcA >>> 0) ^ crcB) >>> 0;
}

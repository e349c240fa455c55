import { getHeapSpaceStatistics } from 'node:v8';

/**
 * Lets go of a large buffer's memory at the next collection of the young generation.
 *
 * A buffer that outlives two such collections (a copy block, a deflated piece waiting its turn)
 * is promoted, and its memory outside the heap then waits for a full collection, which a process
 * whose heap barely grows rarely makes: tens of MB of dead buffers stay resident. Moving the
 * memory to a new, unreferenced ArrayBuffer (a transfer) leaves it to the young generation.
 *
 * Only for a buffer nothing else uses or will use (no read or write in progress): its
 * ArrayBuffer is detached, so every view of it becomes empty. Small buffers, which may share
 * Node's pool, are left alone.
 */
const MIN_DISCARD_BYTES = 64 * 1024;

export function discard(buffer: Buffer): void {
  const whole = buffer.buffer;
  if (!(whole instanceof ArrayBuffer) || whole.byteLength < MIN_DISCARD_BYTES) return;
  structuredClone(whole, { transfer: [whole] });
}

// Where the short-lived objects go, one replacing the next, so none is optimized away.
const scratch: { last?: object } = {};
/**
 * Brings a collection of the young generation about: short-lived objects that fill what is left
 * of it. For a thread that is about to wait, so buffers it discarded go now rather than at its
 * next allocation.
 */
export function collectYoung(): void {
  const young = getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
  if (young === undefined) return;
  // { a } is 32 bytes on a 64-bit heap; a few more than fit.
  for (let i = Math.ceil(young.space_available_size / 32) + 64; i > 0; i--) scratch.last = { a: i };
  delete scratch.last;
}

/**
 * Counts the bytes of buffers a thread makes outside V8's heap (inflated pieces) and brings a
 * collection of the young generation about (collectYoung) after every `everyBytes` of them: their
 * small JS objects barely fill the young generation, so without it dead ones would pile up, tens of
 * MB, before a collection came. One collection each time, so the piece zlib is filling survives it
 * in the young generation rather than being promoted to the old one.
 */
export function collectYoungEvery(everyBytes: number): (madeBytes: number) => void {
  let fresh = 0;
  return (madeBytes) => {
    fresh += madeBytes;
    if (fresh < everyBytes) return;
    fresh = 0;
    collectYoung();
  };
}

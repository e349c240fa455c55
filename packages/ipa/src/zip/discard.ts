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

/**
 * How a process that signs should be started. With default settings the process around signing's
 * own buffers grows by tens of MB:
 * - glibc gives each thread that allocates (main, libuv pool, V8's helpers) its own malloc arena,
 *   and freed 1 MiB buffers leave every arena fragmented; two arenas keep that in check at no
 *   measurable cost in speed;
 * - V8's young generation grows to 3 x 16 MiB semi-spaces on a 64-bit machine. Signing makes little
 *   garbage on the JS heap but many short-lived buffers, which a collection of the young generation
 *   frees: 1 MiB semi-spaces collect it often, and cost no measurable time;
 * - V8 lets the old generation grow to a multiple of what is live before a full collection, and its
 *   optimizing compiler's code and scratch memory come on top. `--optimize-for-size` grows the heap
 *   in smaller steps and compiles leaner: the n-th sign of a 1 GB IPA peaked at 89-91 MB instead of
 *   99-104 MB, and a first sign at 112-118 MB instead of 119-124 MB, in the same CPU time (within
 *   the runs' spread; docs/benchmarks.md).
 * bench/sign measures peak RSS started this way. The bin sets these in its #! line; a service that
 * spawns sign workers passes them to `child_process.fork` / `spawn`.
 */
export const SIGN_PROCESS_TUNING = {
  env: { MALLOC_ARENA_MAX: '2' },
  execArgv: ['--max-semi-space-size=1', '--optimize-for-size'],
} as const;

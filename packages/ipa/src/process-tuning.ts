/**
 * How a process that signs should be started. With default settings the process around signing's
 * own buffers grows by tens of MB:
 * - glibc gives each thread that allocates (main, libuv pool, V8's helpers) its own malloc arena,
 *   and freed 1 MiB buffers leave every arena fragmented; two arenas keep that in check at no
 *   measurable cost in speed;
 * - V8's young generation grows to 3 x 16 MiB semi-spaces on a 64-bit machine. Signing makes little
 *   garbage on the JS heap but many short-lived buffers, which a collection of the young generation
 *   frees: 1 MiB semi-spaces collect it often, and cost no measurable time;
 * - V8 lets the old generation grow to up to four times what is live before a full collection.
 *   `--heap-growing-percent=50` holds each step to 1.5 times: the n-th sign of a 1 GB IPA peaked
 *   at 87-92 MB instead of 94-109 MB, and a first sign at 112-116 MB instead of 115-122 MB, in the
 *   same time within the runs' spread (alternating on a quiet machine; docs/benchmarks.md).
 *   `--optimize-for-size` saved as much but cost the n-th sign 10-30 % more CPU.
 * bench/sign measures peak RSS started this way. The bin sets these in its #! line; a service that
 * spawns sign workers passes them to `child_process.fork` / `spawn`.
 */
export const SIGN_PROCESS_TUNING = {
  env: { MALLOC_ARENA_MAX: '2' },
  execArgv: ['--max-semi-space-size=1', '--heap-growing-percent=50'],
} as const;

/**
 * How a process that signs should be started. Signing's own buffers stay flat (about 60 MB at any
 * IPA size), but with default settings the process around them grows by 50-80 MB more:
 * - glibc gives each thread that allocates (main, digest worker, libuv pool) its own malloc arena,
 *   and freed 1 MiB buffers leave every arena fragmented; two arenas keep that in check at no
 *   measurable cost in speed;
 * - V8's young generation grows to 3 x 16 MiB semi-spaces on a 64-bit machine; 4 MiB is plenty
 *   for the short-lived garbage signing makes.
 * bench/sign measures peak RSS both ways. The bin sets these in its #! line; a service that spawns
 * sign workers passes them to `child_process.fork` / `spawn`.
 */
export const SIGN_PROCESS_TUNING = {
  env: { MALLOC_ARENA_MAX: '2' },
  execArgv: ['--max-semi-space-size=4'],
} as const;

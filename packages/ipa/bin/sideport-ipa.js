#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=1 --heap-growing-percent=50
// A committed shim, so the bin is executable before and after the TypeScript build. The #! line
// starts node as src/process-tuning.ts says a signing process should be started.
await import('../dist/cli.js');

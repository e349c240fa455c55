#!/usr/bin/env node
// A committed shim, so the bin is executable before and after the TypeScript build.
await import('../dist/cli.js');

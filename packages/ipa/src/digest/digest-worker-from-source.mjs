// The digest thread when the package runs from its TypeScript sources (tests, tsx). On Node 20 the
// hooks `--import tsx` registers do not load a worker's .ts entry, so this registers tsx's inside
// the thread, then loads digest-worker.ts. The built package starts dist/digest/digest-worker.js
// directly; tsc does not compile this file and nothing in dist refers to it.
import { register } from 'tsx/esm/api';

register();
await import('./digest-worker.ts');

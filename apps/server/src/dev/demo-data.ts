import path from 'node:path';

/**
 * The demo's data folder when DATA_DIR is not set: `npm run demo` runs in the repository root, so
 * `./data-demo` there. `npx sideport --demo` opens the same folder from anywhere in the repository.
 * (src/dev and dist/dev are both four levels below the repository root.)
 */
export const DEMO_DATA_DIR = path.resolve(import.meta.dirname, '../../../..', 'data-demo');

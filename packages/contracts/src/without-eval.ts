import { config } from 'zod/mini';

/**
 * Imported first by clients under a Content-Security-Policy without 'unsafe-eval' (the web app).
 * zod probes `new Function` when a schema is built, to compile fast parsers, and a browser reports
 * that probe as a policy violation even though zod catches it. This module runs before any schema
 * exists and makes zod interpret schemas instead; the server, which has no such policy, keeps the
 * compiled parsers. (zod/mini sets the same global setting as zod, without zod's full API.)
 */
config({ jitless: true });

import { z } from 'zod';

/**
 * A 204 answer (a delete, a retry, sign-out, a setup link that still works): no body. The web
 * client reads an answer that is not JSON as undefined, and names this schema for such calls.
 */
export const noContent = z.undefined();

import type { AppEntry } from '@sideport/contracts';

/** An entry as the client holds it: live events add the working agent's progress (0-100). */
export type LiveEntry = AppEntry & { progress?: number | null };

// zod/mini, like catalog.ts: My page parses these in the web app.
import * as z from 'zod/mini';
import { signType } from './sign-modes.js';

/** docs/product.md, Entities and fields, Device. status is one of its five values. */
export const deviceStatus = z.enum(['Add', 'Expired', 'Registered', 'Process', 'Pending']);
export type DeviceStatus = z.infer<typeof deviceStatus>;

export const device = z.object({
  Product: z.string(),
  UDID: z.string(),
  status: deviceStatus,
  /** ISO date; only when Registered. */
  expired_date: z.optional(z.string()),
  /** DEVICE_NAME as the device sent it at enrollment ('Ana’s iPhone'); null when it sent none. */
  name: z.nullable(z.string()),
  /** Why it is held in Process, in a sentence for its owner (Apple has not listed it in profiles yet); only then. */
  reason: z.optional(z.string()),
});
export type Device = z.infer<typeof device>;

/** The plans of GET /api/pay/service/{n} (docs/product.md, Calls): 0 and 1 allow 20 apps a day, 3 and 4 50. */
export const planNumber = z.union([z.literal(0), z.literal(1), z.literal(3), z.literal(4)]);
export type PlanNumber = z.infer<typeof planNumber>;

/** GET /api/info answer (docs/product.md, Entities and fields, Account info). */
export const accountInfo = z.object({
  Id: z.string(),
  premium: z.boolean(),
  /** ISO date of the premium expiry (the current plan's renewal), or null when not premium. */
  expired_date: z.nullable(z.string()),
  daily_limit: z.int(),
  device_info: z.array(device),
  /** The current plan (the service number it was bought as), or null without one. */
  plan: z.nullable(planNumber),
  /** Decrypt requests counted today (UTC), against daily_limit. */
  used_today: z.int(),
});
export type AccountInfo = z.infer<typeof accountInfo>;

/** GET /api/premium: answered only to a premium user (others get 403 with the reason). */
export const premiumAnswer = z.object({ premium: z.literal(true), expired_date: z.string() });

/**
 * GET /api/config: the public settings the web app follows, and whether a decrypt agent is online,
 * so a person who asks for a decrypt learns why nothing moves when none is. Sign types not in `signTypes` are
 * refused by this server (their dylibs are not configured); `decryptPaid` false: paid apps are Not.
 */
export const publicConfig = z.object({
  chatUrl: z.nullable(z.string()),
  channelUrl: z.nullable(z.string()),
  signTypes: z.array(signType),
  decryptPaid: z.boolean(),
  /** Decrypt agents seen within the last few minutes; 0: requests wait in the queue until one comes. */
  agentsOnline: z.int(),
  /** When any agent was last seen (ISO), or null when none ever was. */
  agentLastSeenAt: z.nullable(z.string()),
  /** Whether Feather Install and Feather Cert are offered (FEATHER_IPA is set). */
  feather: z.boolean(),
});
export type PublicConfig = z.infer<typeof publicConfig>;

/**
 * GET /api/queue-status: whether requests wait for an agent. `waiting_for_agent` is true when
 * entries wait and no agent has called for some minutes (agent_seen_at: the latest call, or null).
 */
export const queueStatus = z.object({
  waiting: z.int(),
  agent_seen_at: z.nullable(z.string()),
  waiting_for_agent: z.boolean(),
});
export type QueueStatus = z.infer<typeof queueStatus>;

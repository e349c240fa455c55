import { z } from 'zod';

/** docs/product.md, Entities and fields, Device. status is one of its five values. */
export const deviceStatus = z.enum(['Add', 'Expired', 'Registered', 'Process', 'Pending']);
export type DeviceStatus = z.infer<typeof deviceStatus>;

export const device = z.object({
  Product: z.string(),
  UDID: z.string(),
  status: deviceStatus,
  /** ISO date; only when Registered. */
  expired_date: z.string().optional(),
});
export type Device = z.infer<typeof device>;

/** GET /api/info answer (docs/product.md, Entities and fields, Account info). */
export const accountInfo = z.object({
  Id: z.string(),
  premium: z.boolean(),
  /** ISO date of the premium expiry, or null when not premium. */
  expired_date: z.string().nullable(),
  daily_limit: z.number().int(),
  device_info: z.array(device),
});
export type AccountInfo = z.infer<typeof accountInfo>;

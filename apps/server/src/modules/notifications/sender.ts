import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import webPush from 'web-push';
import type { PushPayload } from '@sideport/contracts';
import type { Database } from '../../db/client.js';
import { endOfAttempt, type LeaseLimits } from '../../platform/lease-queue.js';
import * as q from './queries.js';
import type { VapidKeys } from './vapid.js';

export interface PushSenderSettings {
  vapid: VapidKeys;
  /** VAPID's `sub` claim (RFC 8292): a mailto: or https: URL the push service may contact. */
  subject: string;
  /** How long a push service may keep a push for a browser that is offline. */
  ttlSeconds: number;
  /** Deliveries one claim takes, and how many of them are sent at once. */
  batchSize: number;
  concurrency: number;
  leaseSeconds: number;
  limits: LeaseLimits;
  timeoutMs: number;
}

export interface PushSenderDeps {
  db: Database;
  clock: () => Date;
  settings: PushSenderSettings;
  fetchImpl?: typeof fetch;
  log: { warn(obj: object, msg: string): void };
}

/** What one run sent, and what it removed or put off. */
export interface SendResult {
  sent: number;
  removed: number;
  retried: number;
  failed: number;
}

/** A VAPID token lives 12 hours (RFC 8292 allows up to 24) and is made anew an hour before its end. */
const TOKEN_LIFETIME_MS = 12 * 3_600_000;
const TOKEN_RENEW_MS = 3_600_000;

/** Backoff after a push service's 429 or 5xx without Retry-After. */
const RETRY_MS = 30_000;

/**
 * Sends queued pushes (RFC 8030) to the push services, under leases (platform/lease-queue.ts):
 * each claim takes a batch, sends it a few at a time, and runs until the queue is empty. The
 * payload is encrypted to the browser's keys (RFC 8291, aes128gcm) and the VAPID token (RFC 8292)
 * signed with the server's key by `web-push`, the token once per push service and 12 hours; the
 * request itself goes out with fetch. A 404
 * or 410 means the subscription is gone: it is removed with its other pushes. A 429 or 5xx waits
 * (the service's Retry-After) and counts as a failure; after the last the push is given up.
 */
export function createPushSender(deps: PushSenderDeps) {
  const { db, clock, settings } = deps;
  const doFetch = deps.fetchImpl ?? fetch;
  const worker = `${hostname()}:${process.pid}:push-${randomBytes(3).toString('hex')}`;

  /**
   * The VAPID `Authorization` for a push service (its origin is the token's audience), signed once
   * and reused until an hour before it expires: an ES256 signature per push would cost as much
   * as the encryption.
   */
  const tokens = new Map<string, { header: string; expiresAt: number }>();
  function vapidAuthorization(audience: string) {
    const now = clock().getTime();
    const cached = tokens.get(audience);
    if (cached && cached.expiresAt - now > TOKEN_RENEW_MS) return cached.header;
    const expiresAt = now + TOKEN_LIFETIME_MS;
    const { Authorization } = webPush.getVapidHeaders(
      audience,
      settings.subject,
      settings.vapid.publicKey,
      settings.vapid.privateKey,
      'aes128gcm',
      Math.floor(expiresAt / 1000),
    ) as { Authorization: string };
    tokens.set(audience, { header: Authorization, expiresAt });
    return Authorization;
  }

  async function sendOne(d: q.HeldDelivery, result: SendResult, sent: q.HeldDelivery[]) {
    const payload: PushPayload = {
      id: String(d.notification.id),
      kind: d.notification.kind,
      title: d.notification.title,
      body: d.notification.body,
      url: d.notification.url,
    };
    // Encrypted here (aes128gcm); the VAPID token is added below, made once per push service.
    const request = webPush.generateRequestDetails(
      { endpoint: d.endpoint, keys: { p256dh: d.p256dh, auth: d.auth } },
      JSON.stringify(payload),
      { TTL: settings.ttlSeconds, contentEncoding: 'aes128gcm', urgency: 'normal' },
    );
    (request.headers as Record<string, string>).Authorization = vapidAuthorization(
      new URL(d.endpoint).origin,
    );
    let status: number;
    let retryAfter: string | null = null;
    try {
      const response = await doFetch(request.endpoint, {
        method: 'POST',
        headers: request.headers as Record<string, string>,
        body: request.body ? new Uint8Array(request.body) : null,
        signal: AbortSignal.timeout(settings.timeoutMs),
      });
      status = response.status;
      retryAfter = response.headers.get('retry-after');
      await response.arrayBuffer().catch(() => undefined);
    } catch (err) {
      status = 0;
      deps.log.warn({ err, endpoint: new URL(d.endpoint).origin }, 'a push service did not answer');
    }
    if (status >= 200 && status < 300) {
      sent.push(d);
      result.sent++;
      return;
    }
    if (status === 404 || status === 410) {
      // The browser unsubscribed (or the service forgot it): the subscription and its pushes go.
      await q.deleteSubscription(db, { id: d.subscriptionId });
      result.removed++;
      return;
    }
    const transient = status === 0 || status === 429 || status >= 500;
    const reason = status === 0 ? 'The push service did not answer.' : `The push service answered ${status}.`;
    const outcome = endOfAttempt(d, { kind: 'failed', reason, final: !transient }, settings.limits);
    const waitMs = retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : RETRY_MS;
    const now = clock();
    await q.deliveryEnded(db, worker, d, outcome, now, new Date(now.getTime() + waitMs));
    if (outcome.isFinal) result.failed++;
    else result.retried++;
  }

  return {
    /** Sends until nothing queued is due (the periodic task, woken when pushes are queued). */
    async run(): Promise<SendResult> {
      const result: SendResult = { sent: 0, removed: 0, retried: 0, failed: 0 };
      for (;;) {
        const batch = await q.claimDeliveries(
          db,
          worker,
          clock(),
          settings.leaseSeconds,
          settings.batchSize,
          settings.limits.maxLostLeases,
        );
        if (batch.length === 0) return result;
        let next = 0;
        const sent: q.HeldDelivery[] = [];
        const lanes = Array.from({ length: Math.min(settings.concurrency, batch.length) }, async () => {
          while (next < batch.length) {
            const delivery = batch[next++]!;
            await sendOne(delivery, result, sent).catch((err: unknown) =>
              deps.log.warn({ err, delivery: delivery.id }, 'a push could not be sent'),
            );
          }
        });
        await Promise.all(lanes);
        await q.deliveriesDone(db, worker, sent);
      }
    },
  };
}

export type PushSender = ReturnType<typeof createPushSender>;

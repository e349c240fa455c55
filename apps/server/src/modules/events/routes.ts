import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { currentSession, isAdmin, SESSION_COOKIE, type Guards } from '../auth/guard.js';
import type { AuthService } from '../auth/service.js';
import type { EventBus } from '../../platform/events.js';
import { createStreamCounter, type StreamLimits } from './stream-limits.js';

/** The reconnect delay a stream ended by a closing server (an upgrade) asks for. */
const RECONNECT_AFTER_CLOSE_MS = 1000;

export interface EventRoutesDeps {
  guards: Guards;
  bus: Pick<EventBus, 'subscribe'>;
  auth: Pick<AuthService, 'findSession'>;
  clock: () => Date;
  /** How many streams a session, a user and this process may hold (stream-limits.ts). */
  limits: StreamLimits;
  /** A comment line this often keeps proxies from closing an idle stream. */
  keepAliveMs?: number;
  /**
   * How often a stream asks again whether its session still holds: the backstop for an end it
   * was not told of (a notification lost while the database connection was down).
   */
  sessionCheckMs?: number;
}

/** setTimeout's longest delay (about 24.8 days); a session ending later is left to the periodic check. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * GET /api/events: Server-Sent Events for one signed-in tab (docs/architecture.md, Web client). Decrypt entry
 * changes go to everyone; sign and device changes only to their owner (device changes, which carry
 * no data, to admins too). Events come from every API
 * process through the database's LISTEN/NOTIFY, so the process a tab is connected to does not matter.
 *
 * A stream lives no longer than its session: it ends at sign-out, at a new password (both told
 * through the bus, from any process), when the session expires, and, as a backstop, at the next
 * periodic check that finds the session gone. Each holds a connection, so one session, one user
 * and the process may hold only so many (429 past them: stream-limits.ts).
 */
export async function eventRoutes(
  app: FastifyInstance,
  { guards, bus, auth, clock, limits, keepAliveMs = 20_000, sessionCheckMs = 60_000 }: EventRoutesDeps,
) {
  const streams = createStreamCounter(limits);
  const open = new Set<(hint?: string) => void>();
  // Streams never go idle, so they would hold a closing server open: end them first, telling the
  // browser to reconnect soon (to another process, behind the load balancer).
  app.addHook('preClose', async () => {
    for (const end of open) end(`retry: ${RECONNECT_AFTER_CLOSE_MS}\n\n`);
  });

  const schema = {
    summary: 'Live changes for the signed-in person (Server-Sent Events)',
    description:
      'A stream that never ends: one `data:` line of JSON per change (a queue entry, a sign, a device), ' +
      'comment lines to keep proxies from closing it, `retry: 2000`.',
    produces: ['text/event-stream'],
    response: { 200: z.string().meta({ description: 'The event stream' }) },
  };
  app.get('/api/events', { onRequest: guards.requireUser, schema }, (request, reply) => {
    const session = currentSession(request);
    const { user } = session;
    const token = request.cookies[SESSION_COOKIE];
    const release = streams.open(session.key, user.id);
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-content-type-options': 'nosniff',
    });
    // The browser reconnects after this long if the stream drops (a server restart).
    res.write('retry: 2000\n\n');
    const unsubscribe = bus.subscribe((message) => {
      const sessionEnded =
        (message.kind === 'session-ended' && message.session === session.key) ||
        (message.kind === 'sessions-ended' && message.userId === user.id);
      if (sessionEnded) return end();
      if (message.kind !== 'live') return;
      // Device changes carry no data: admins get everyone's, so the devices waiting follow live.
      const forAdmin = message.event.type === 'device' && isAdmin(user);
      if (message.userId !== undefined && message.userId !== user.id && !forAdmin) return;
      res.write(`data: ${JSON.stringify(message.event)}\n\n`);
    });
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
    const untilExpiry = session.expiresAt.getTime() - clock().getTime();
    const expiry =
      untilExpiry <= MAX_TIMER_MS ? setTimeout(() => end(), Math.max(untilExpiry, 0)) : undefined;
    const sessionCheck = setInterval(() => {
      auth.findSession(token).then(
        (found) => {
          if (!found) end();
        },
        (err: unknown) => request.log.warn({ err }, 'could not check the session of an event stream'),
      );
    }, sessionCheckMs);
    const close = () => {
      clearInterval(keepAlive);
      clearInterval(sessionCheck);
      clearTimeout(expiry);
      unsubscribe();
      release();
      open.delete(end);
    };
    const end = (hint?: string) => {
      close();
      res.end(hint);
    };
    open.add(end);
    request.raw.on('close', close);
    res.on('error', close);
  });
}

import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { currentUser, isAdmin, type Guards } from '../auth/guard.js';
import type { EventBus } from '../../platform/events.js';

/** The reconnect delay a stream ended by a closing server (an upgrade) asks for. */
const RECONNECT_AFTER_CLOSE_MS = 1000;

export interface EventRoutesDeps {
  guards: Guards;
  bus: Pick<EventBus, 'subscribe'>;
  /** A comment line this often keeps proxies from closing an idle stream. */
  keepAliveMs?: number;
}

/**
 * GET /api/events: Server-Sent Events for one signed-in tab (docs/architecture.md, Web client). Decrypt entry
 * changes go to everyone; sign and device changes only to their owner (device changes, which carry
 * no data, to admins too). Events come from every API
 * process through the database's LISTEN/NOTIFY, so the process a tab is connected to does not matter.
 */
export async function eventRoutes(
  app: FastifyInstance,
  { guards, bus, keepAliveMs = 20_000 }: EventRoutesDeps,
) {
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
    const user = currentUser(request);
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
      if (message.kind !== 'live') return;
      // Device changes carry no data: admins get everyone's, so the devices waiting follow live.
      const forAdmin = message.event.type === 'device' && isAdmin(user);
      if (message.userId !== undefined && message.userId !== user.id && !forAdmin) return;
      res.write(`data: ${JSON.stringify(message.event)}\n\n`);
    });
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
    const close = () => {
      clearInterval(keepAlive);
      unsubscribe();
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

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { metricsRefusal } from './access.js';
import type { Metrics } from './registry.js';

export interface MetricsRoutesDeps {
  metrics: Pick<Metrics, 'render' | 'contentType'>;
  /** METRICS_TOKEN: required of every caller when set; unset, loopback callers only. */
  token: string | undefined;
}

const TEXT = 'text/plain; charset=utf-8';

/**
 * The latency of every answer by the route pattern the router chose (`/api/latest/:page`), never
 * the address asked, which carries ids and tokens; an address nothing matched is one series. On
 * the root instance, before the routes, so every route and the not-found answers are measured.
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: Pick<Metrics, 'observeRequest'>) {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.observeRequest(
      { method: request.method, route, statusCode: reply.statusCode },
      reply.elapsedTime / 1000,
    );
  });
}

/**
 * GET /metrics in the Prometheus text format. Outside /api, so the cross-site guard (which a
 * scraper's plain requests would pass anyway) never applies, and an explicit route, so the web
 * app's fallback never answers it.
 */
export async function metricsRoutes(app: FastifyInstance, { metrics, token }: MetricsRoutesDeps) {
  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics of this process',
        description:
          'The Prometheus text exposition format (text/plain; version=0.0.4). Without METRICS_TOKEN only callers on ' +
          "the server's own machine (loopback) are answered, others get 403, and so does a request whose " +
          'X-Forwarded-For, Forwarded or X-Real-IP names a client elsewhere (a proxy on this machine); with it, every caller must send ' +
          '`Authorization: Bearer <METRICS_TOKEN>` (401 otherwise).',
        tags: ['operations'],
        security: [{ metricsToken: [] }],
      },
    },
    async (request, reply) => {
      const refusal = metricsRefusal(token, {
        remoteAddress: request.raw.socket.remoteAddress,
        authorization: request.headers.authorization,
        headers: request.headers,
      });
      if (refusal) {
        if (refusal.status === 401) reply.header('www-authenticate', 'Bearer realm="metrics"');
        return reply.code(refusal.status).type(TEXT).send(refusal.message);
      }
      return reply
        .header('cache-control', 'no-store')
        .type(metrics.contentType)
        .send(await metrics.render());
    },
  );
}

/**
 * The same GET /metrics on a port of its own, for processes with no API (`sideport worker`): plain
 * node:http, the same access rule, a sentence for anything else.
 */
export async function serveMetrics(options: {
  host: string;
  port: number;
  token: string | undefined;
  metrics: Pick<Metrics, 'render' | 'contentType'>;
  log: { warn(obj: object, msg: string): void };
}): Promise<{ url: string; close(): Promise<void> }> {
  const { metrics, token, log } = options;
  const answer = (
    res: ServerResponse,
    status: number,
    text: string,
    headers: Record<string, string> = {},
  ) => {
    res.writeHead(status, { 'content-type': TEXT, ...headers });
    res.end(text);
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const pathname = new URL(req.url ?? '/', 'http://metrics').pathname;
    if (pathname !== '/metrics')
      return answer(
        res,
        404,
        `There is no ${req.method} ${pathname.length > 200 ? 'this address' : pathname} here.`,
      );
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return answer(res, 405, 'Only GET reads the metrics.', { allow: 'GET, HEAD' });
    const refusal = metricsRefusal(token, {
      remoteAddress: req.socket.remoteAddress,
      authorization: req.headers.authorization,
      headers: req.headers,
    });
    if (refusal)
      return answer(
        res,
        refusal.status,
        refusal.message,
        refusal.status === 401 ? { 'www-authenticate': 'Bearer realm="metrics"' } : {},
      );
    const body = await metrics.render();
    res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
    res.end(req.method === 'HEAD' ? undefined : body);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      log.warn({ err }, 'could not answer a metrics scrape');
      if (!res.headersSent) answer(res, 500, 'Please retry later.');
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

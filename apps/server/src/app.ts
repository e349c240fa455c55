import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyInstance, type FastifyReply, type RouteOptions } from 'fastify';
import type { DestinationStream } from 'pino';
import fastifySwagger from '@fastify/swagger';
import {
  jsonSchemaTransform,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { publicConfig } from '@sideport/contracts';
import type { DatabaseHandle } from './db/client.js';
import { accountRoutes } from './modules/account/routes.js';
import { createGuards, SESSION_COOKIE } from './modules/auth/guard.js';
import { authRoutes } from './modules/auth/routes.js';
import { billingRoutes } from './modules/billing/routes.js';
import { catalogRoutes } from './modules/catalog/routes.js';
import { ENROLLMENT_PATH } from './modules/devices/enrollment-service.js';
import { deviceRoutes } from './modules/devices/routes.js';
import { identityRoutes } from './modules/identity/routes.js';
import { poolRoutes } from './modules/identity/pool/routes.js';
import { adminRoutes } from './modules/admin/routes.js';
import { agentRoutes } from './modules/agents/routes.js';
import { metricsRoutes, registerRequestMetrics } from './modules/metrics/routes.js';
import { decryptRoutes } from './modules/decrypt/routes.js';
import { signRoutes } from './modules/sign/routes.js';
import { capabilityRoutes } from './modules/versions/capabilities/routes.js';
import { eventRoutes } from './modules/events/routes.js';
import { notificationRoutes } from './modules/notifications/routes.js';
import { updateRoutes } from './modules/updates/routes.js';
import { streamCapFor } from './modules/events/stream-limits.js';
import { periodicTasks, stopServices } from './lifecycle.js';
import { createServices } from './services.js';
import type { Config } from './platform/config.js';
import { registerBodyIdleTimeout } from './platform/body-timeout.js';
import { createClientErrorHandler } from './platform/client-error.js';
import { createSiteCheck, decodedPath, isApiPath, registerCrossSiteGuard } from './platform/cross-site.js';
import { registerErrorHandler } from './platform/error-handler.js';
import { createFaultTracker } from './platform/faults.js';
import { registerHostCheck } from './platform/public-origin.js';
import { READINESS_PROBE_KEY, registerReadiness } from './platform/readiness.js';
import { loggerOptions } from './platform/logger.js';
import { readOpenFileLimit } from './platform/open-files.js';
import { hasControlCharacters } from './platform/params.js';
import { createScheduler } from './platform/scheduler.js';
import { registerSecurityHeaders, securityHeaderMap } from './platform/security-headers.js';

export interface AppDeps {
  config: Config;
  database: DatabaseHandle;
  clock?: () => Date;
  /** Where the log lines go (stdout unless given; the tests read them). */
  logStream?: DestinationStream;
}

/** Paths that authenticate on their own (agent token, webhook signature, enrollment, signed URLs) and so skip the cross-site check. */
export const CROSS_SITE_EXEMPT = ['/api/agent/', '/api/webhooks/', ENROLLMENT_PATH, '/files/'] as const;

/** A route as registered: method, path pattern and the schemas that check its input. */
export interface RegisteredRoute {
  method: string;
  url: string;
  schema: FastifyRouteSchema | undefined;
  config: RouteOptions['config'];
}
type FastifyRouteSchema = RouteOptions['schema'];

/**
 * TRUST_PROXY as Fastify takes it. A hop count becomes a function: Fastify (5.12) believes no
 * forwarding header at all for a bare number, and a function is what proxy-addr asks of `i`, the
 * hop's place counted from the connection (0) leftwards through X-Forwarded-For.
 */
export function proxyTrust(trust: Config['TRUST_PROXY']) {
  if (trust === false) return false;
  if (typeof trust === 'number') return (_address: string, hop: number) => hop < trust;
  return [...trust];
}

export async function buildApp({ config, database, clock = () => new Date(), logStream }: AppDeps) {
  const isHttps = config.PUBLIC_URL?.startsWith('https:') ?? false;
  const securityHeaders = securityHeaderMap(isHttps);
  const app: FastifyInstance = Fastify({
    logger: loggerOptions(config, logStream),
    genReqId: () => randomUUID(),
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: proxyTrust(config.TRUST_PROXY),
    // Headers must come whole within HEADERS_TIMEOUT_MS (408 from the client error handler), checked
    // often enough that a connection trickling them is closed near that bound, not 30 s after it.
    http: {
      headersTimeout: config.HEADERS_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(config.HEADERS_TIMEOUT_MS / 4))),
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    // While closing, requests still arriving get the readiness module's sentence, not fastify's JSON.
    return503OnClosing: false,
    // Errors raised before routing (a malformed %-escape in the path) get the same text/plain answer.
    frameworkErrors: (error, request, reply) => {
      request.log.info({ code: error.code }, 'malformed request address');
      // No hook runs before routing, so the security headers are set here.
      void (reply as FastifyReply)
        .code(400)
        .headers(securityHeaders)
        .type('text/plain; charset=utf-8')
        .send('This address is not valid.');
    },
    // What Node's HTTP parser refuses (a bad Content-Length) gets a text/plain sentence too.
    clientErrorHandler: createClientErrorHandler(() => app.log, securityHeaders),
  });
  // Every route, as registered: the route-access suite checks each against its declared access.
  const routes: RegisteredRoute[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat())
      routes.push({ method, url: route.url, schema: route.schema, config: route.config });
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // What this process knows of the parts it depends on (platform/faults.ts).
  const faults = createFaultTracker(clock);
  registerErrorHandler(app, faults);
  const readiness = registerReadiness(app, {
    ping: () => database.ping(),
    // The services are made below; the route asks the store only once requests arrive.
    storage: {
      get kind() {
        return services.files.kind;
      },
      ping: async () => void (await services.files.sizeOf(READINESS_PROBE_KEY)),
    },
    faults,
    databaseKind: database.kind,
  });
  registerBodyIdleTimeout(app, { idleMs: config.BODY_IDLE_TIMEOUT_MS, timeoutMs: config.BODY_TIMEOUT_MS });
  // Before the cross-site guard, so its refusals carry the same headers.
  await registerSecurityHeaders(app, { isHttps });
  registerHostCheck(app);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // Every service, made in dependency order (services.ts); what follows registers routes with them.
  const services = await createServices({ config, database, clock, log: app.log, faults });
  const {
    metrics,
    auth,
    setup,
    navigation,
    accountPool,
    bus,
    files,
    catalog,
    audit,
    jobs,
    agents,
    signing,
    signWorkers,
  } = services;
  const {
    billing,
    billingProvider,
    devCheckout,
    devices,
    enrollment,
    registration,
    urls,
    decrypt,
    sign,
    checklist,
    updates,
    notifications,
  } = services;
  // The periodic work (lease sweeps, the file sweep, device registration, the session purge).
  const scheduler = createScheduler(periodicTasks(config, { role: 'api', services }), app.log);
  // In the order lifecycle.ts gives, the same as `sideport worker`'s.
  app.addHook('onClose', async () => {
    await stopServices(services, scheduler);
  });
  registerRequestMetrics(app, metrics);
  await app.register(fastifyCookie);
  // OpenAPI of every route, from the same zod schemas that validate them: GET /api/openapi.json.
  await app.register(fastifySwagger, {
    openapi: {
      info: { title: 'Sideport API', version: '1' },
      components: {
        securitySchemes: {
          session: { type: 'apiKey', in: 'cookie', name: 'sideport_session' },
          metricsToken: { type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN (GET /metrics)' },
        },
      },
    },
    transform: jsonSchemaTransform,
  });

  const guards = createGuards(auth);
  // After the cookie parser and before every route: its refusals carry the security headers too.
  const siteCheck = createSiteCheck({
    ...(config.PUBLIC_URL ? { publicOrigin: new URL(config.PUBLIC_URL).origin } : {}),
    sessionCookie: SESSION_COOKIE,
    redeemNavigationToken: (request) => navigation.redeem(request),
  });
  registerCrossSiteGuard(app, { exemptPrefixes: CROSS_SITE_EXEMPT, check: siteCheck });
  await app.register(authRoutes, { auth, setup, navigation, guards, secureCookies: isHttps });
  await app.register(billingRoutes, {
    billing,
    devCheckout,
    guards,
    siteCheck,
    providerName: billingProvider.name,
    publicUrl: config.PUBLIC_URL,
  });
  await app.register(accountRoutes, { guards, billing, devices });
  await app.register(catalogRoutes, {
    catalog,
    guards,
    answerCacheMs: config.LIST_CACHE_MS,
    bus,
    agentSeenAt: async () => (await agents.presence()).lastSeenAt,
  });
  await app.register(decryptRoutes, { decrypt, guards, files, urls, publicUrl: config.PUBLIC_URL });
  await app.register(signRoutes, { sign, guards, files, urls, publicUrl: config.PUBLIC_URL });
  await app.register(updateRoutes, { guards, updates });
  await app.register(notificationRoutes, { guards, notifications });
  await app.register(agentRoutes, { agents, jobs, uploadIdleTimeoutMs: config.AGENT_UPLOAD_IDLE_TIMEOUT_MS });
  await app.register(adminRoutes, { guards, agents, jobs, audit, checklist });
  await app.register(capabilityRoutes, {
    guards,
    db: database.db,
    copyAppIds: services.copyAppIds,
    audit,
  });
  // Each stream holds a connection (a file): the process's cap stays below its open-file limit.
  const openFiles = readOpenFileLimit();
  const streamLimits = {
    perSession: config.EVENT_STREAMS_PER_SESSION,
    perUser: config.EVENT_STREAMS_PER_USER,
    total: streamCapFor(openFiles.limit, config.EVENT_STREAMS_MAX),
  };
  app.log.info(
    { openFileLimit: openFiles.limit, from: openFiles.source, ...streamLimits },
    'event stream caps',
  );
  await app.register(eventRoutes, { guards, bus, auth, clock, limits: streamLimits });
  await app.register(deviceRoutes, {
    guards,
    enrollment,
    registration,
    audit: audit.record,
    publicUrl: config.PUBLIC_URL,
  });
  await app.register(identityRoutes, { guards, signing, audit: audit.record });
  await app.register(poolRoutes, { guards, pool: accountPool });

  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // Public, so every page learns what this server offers and whether a decrypt request can move at
  // all (agentsOnline 0: it waits for an agent).
  app
    .withTypeProvider<ZodTypeProvider>()
    .get('/api/config', { schema: { response: { 200: publicConfig } } }, async () => {
      const presence = await agents.presence();
      return {
        chatUrl: config.CHAT_URL ?? null,
        channelUrl: config.CHANNEL_URL ?? null,
        signTypes: sign.offeredTypes(),
        decryptPaid: config.DECRYPT_ALLOW_PAID,
        agentsOnline: presence.online,
        agentLastSeenAt: presence.lastSeenAt?.toISOString() ?? null,
        feather: Boolean(config.FEATHER_IPA),
      };
    });

  readiness.registerRoute();
  app.get('/healthz', async (_request, reply) => {
    try {
      await database.ping();
      return { status: 'ok', database: database.kind };
    } catch (err) {
      app.log.error({ err }, 'health check: database unreachable');
      return reply.code(503).type('text/plain; charset=utf-8').send('The database is unreachable.');
    }
  });

  await app.register(metricsRoutes, { metrics, token: config.METRICS_TOKEN });

  await registerWeb(app, config.WEB_DIST_DIR);
  // In-process sign workers (docs/architecture.md, Topology); `sideport worker` runs more elsewhere.
  signWorkers.start(config.SIGN_WORKERS);
  scheduler.start();
  // Returned beside the app, not on it: a fastify instance is thenable, so `await` would drop extras.
  return { app, routes, services, readiness };
}

export type Built = Awaited<ReturnType<typeof buildApp>>;

/**
 * Serves the built SPA with history fallback: unknown non-API GETs get index.html. The build
 * writes a brotli and a gzip copy beside each text asset (apps/web's precompress plugin); they are
 * sent to browsers that accept them (`Vary: Accept-Encoding`), with no compression work per
 * request. Hashed assets never change under their name: a year, immutable; the rest revalidates.
 */
async function registerWeb(app: FastifyInstance, distDir: string) {
  const hasWeb = existsSync(path.join(distDir, 'index.html'));
  if (hasWeb) {
    await app.register(fastifyStatic, {
      root: distDir,
      index: false,
      preCompressed: true,
      setHeaders(res, filePath) {
        const isHashedAsset = filePath.includes(`${path.sep}assets${path.sep}`);
        res.header('cache-control', isHashedAsset ? 'public, max-age=31536000, immutable' : 'no-cache');
      },
    });
  }
  if (hasWeb) {
    // The root is a folder to the static plugin; the app's page is its index.
    app.get('/', (_request, reply) => reply.header('cache-control', 'no-cache').sendFile('index.html'));
  }
  app.setNotFoundHandler((request, reply) => {
    // Decoded, as the router saw it: /%61pi/nothing is an unknown API address, not a page.
    const shown = decodedPath(request);
    // A missing asset (a page of an older build asking for its old chunk) is a 404, not the app's
    // HTML under a script's name.
    const isPage =
      (request.method === 'GET' || request.method === 'HEAD') &&
      !isApiPath(shown) &&
      !shown.startsWith('/assets/');
    if (isPage && hasWeb) {
      return reply.header('cache-control', 'no-cache').sendFile('index.html');
    }
    if (isPage) {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The web client is not built yet. Run npm run build, then reload.');
    }
    const what = hasControlCharacters(shown) || shown.length > 200 ? 'this address' : shown;
    return reply
      .code(404)
      .type('text/plain; charset=utf-8')
      .send(`There is no ${request.method} ${what} here.`);
  });
}

import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyCookie from '@fastify/cookie';
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyInstance, type FastifyReply, type RouteOptions } from 'fastify';
import type { DestinationStream } from 'pino';
import fastifySwagger from '@fastify/swagger';
import { jsonSchemaTransform, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { publicConfig } from '@sideport/contracts';
import { createCoreServices } from './core-services.js';
import type { DatabaseHandle } from './db/client.js';
import { accountRoutes } from './modules/account/routes.js';
import { createGuards, SESSION_COOKIE } from './modules/auth/guard.js';
import { createNavigationTokens } from './modules/auth/navigation-tokens.js';
import { authRoutes } from './modules/auth/routes.js';
import { billingRoutes } from './modules/billing/routes.js';
import { createBillingService } from './modules/billing/service.js';
import { createBillingProvider } from './modules/billing/setup.js';
import { createAuthService } from './modules/auth/service.js';
import { createSetupLinkService } from './modules/auth/setup-link.js';
import { catalogRoutes } from './modules/catalog/routes.js';
import { createEnrollmentService, ENROLLMENT_PATH, enrollmentSettings } from './modules/devices/enrollment-service.js';
import { createRegistrationService } from './modules/devices/registration.js';
import { deviceRoutes } from './modules/devices/routes.js';
import { identityRoutes } from './modules/identity/routes.js';
import { adminRoutes } from './modules/admin/routes.js';
import { createSetupChecklist } from './modules/admin/setup-checklist.js';
import { agentRoutes } from './modules/agents/routes.js';
import { metricsRoutes, registerRequestMetrics } from './modules/metrics/routes.js';
import { createSideportMetrics } from './modules/metrics/service.js';
import { decryptRoutes } from './modules/decrypt/routes.js';
import { signRoutes } from './modules/sign/routes.js';
import { createSignService, type SignService } from './modules/sign/service.js';
import { createDecryptService, type DecryptService } from './modules/decrypt/service.js';
import { settingOrCreate } from './platform/settings.js';
import { eventRoutes } from './modules/events/routes.js';
import { createUrlSigner } from './platform/signed-urls.js';
import type { Config } from './platform/config.js';
import { registerBodyIdleTimeout } from './platform/body-timeout.js';
import { createClientErrorHandler } from './platform/client-error.js';
import { createSiteCheck, decodedPath, isApiPath, registerCrossSiteGuard } from './platform/cross-site.js';
import { registerErrorHandler } from './platform/error-handler.js';
import { registerHostCheck } from './platform/public-origin.js';
import { loggerOptions } from './platform/logger.js';
import { hasControlCharacters } from './platform/params.js';
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

export async function buildApp({ config, database, clock = () => new Date(), logStream }: AppDeps) {
  const isHttps = config.PUBLIC_URL?.startsWith('https:') ?? false;
  const securityHeaders = securityHeaderMap(isHttps);
  const app: FastifyInstance = Fastify({
    logger: loggerOptions(config, logStream),
    genReqId: () => randomUUID(),
    bodyLimit: config.BODY_LIMIT_BYTES,
    trustProxy: config.TRUST_PROXY,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
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
    for (const method of [route.method].flat()) routes.push({ method, url: route.url, schema: route.schema, config: route.config });
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandler(app);
  registerBodyIdleTimeout(app, { idleMs: config.BODY_IDLE_TIMEOUT_MS });
  // Before the cross-site guard, so its refusals carry the same headers.
  await registerSecurityHeaders(app, { isHttps });
  registerHostCheck(app);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  const metrics = createSideportMetrics({ db: database.db, clock, decryptLeaseSeconds: config.DECRYPT_LEASE_SECONDS, log: app.log });
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

  const { db } = database;
  const auth = createAuthService({
    db,
    clock,
    sessionCacheMs: config.SESSION_CACHE_MS,
    limits: {
      sessionTtlDays: config.SESSION_TTL_DAYS,
      signInPerId: config.SIGN_IN_LIMIT_PER_ID,
      signInPerAddress: config.SIGN_IN_LIMIT_PER_ADDRESS,
      signInWindowMinutes: config.SIGN_IN_WINDOW_MINUTES,
    },
  });
  const guards = createGuards(auth);
  // After the cookie parser and before every route: its refusals carry the security headers too.
  const navigation = createNavigationTokens({ db, clock, auth });
  const siteCheck = createSiteCheck({
    ...(config.PUBLIC_URL ? { publicOrigin: new URL(config.PUBLIC_URL).origin } : {}),
    sessionCookie: SESSION_COOKIE,
    redeemNavigationToken: (request) => navigation.redeem(request),
  });
  registerCrossSiteGuard(app, { exemptPrefixes: CROSS_SITE_EXEMPT, check: siteCheck });
  const setup = createSetupLinkService({
    db,
    clock,
    auth,
    limits: { perAddress: config.SIGN_IN_LIMIT_PER_ADDRESS, windowMinutes: config.SIGN_IN_WINDOW_MINUTES },
  });
  await app.register(authRoutes, { auth, setup, navigation, guards, secureCookies: isHttps });
  // The catalogue tells the decrypt domain, then the sign service, of admin deletes; both exist after it.
  const afterRemoved: Array<DecryptService['afterRemoved'] | SignService['afterRemoved']> = [];
  const { bus, files, catalog, jobs, agents, secrets, devices, signing, signingIdentity, signCache, signWorkers, fileSweep, itunes, resign, recovery } =
    await createCoreServices({
      config,
      database,
      clock,
      log: app.log,
      onRemoved: async (removed) => {
        for (const hook of afterRemoved) await hook(removed);
      },
      metrics: metrics.service,
    });
  app.addHook('onClose', () => bus.close());
  const billingProvider = createBillingProvider(config, { db, clock, log: app.log });
  const billing = createBillingService({
    db,
    clock,
    provider: billingProvider,
    devices,
    users: auth,
    freeDailyLimit: config.FREE_DAILY_LIMIT,
    log: app.log,
  });
  await app.register(billingRoutes, { billing, guards, siteCheck, providerName: billingProvider.name, publicUrl: config.PUBLIC_URL });
  await app.register(accountRoutes, { guards, billing, devices });

  // The download URL key: configured, or made once and shared by every process through the database.
  const urlKey = config.DOWNLOAD_URL_KEY ?? (await settingOrCreate(db, 'download_url_key', () => randomBytes(32).toString('hex')));
  const urls = createUrlSigner(Buffer.from(urlKey), clock);
  await app.register(catalogRoutes, {
    catalog,
    guards,
    answerCacheMs: config.LIST_CACHE_MS,
    agentSeenAt: async () => (await agents.presence()).lastSeenAt,
  });

  const decrypt = createDecryptService({
    db,
    clock,
    bus,
    files,
    urls,
    catalog,
    billing,
    settings: {
      allowPaid: config.DECRYPT_ALLOW_PAID,
      versionsWaitMs: config.VERSIONS_WAIT_SECONDS * 1000,
      versionListTtlMs: config.CATALOG_CACHE_MINUTES * 60_000,
      downloadUrlTtlSeconds: config.DOWNLOAD_URL_TTL_SECONDS,
    },
    // The caller's sign statuses in the version list come from the sign service, made next.
    signStatuses: (userId, versions) => sign.statusesOf(userId, versions),
    log: app.log,
  });
  afterRemoved.push(decrypt.afterRemoved);
  await app.register(decryptRoutes, { decrypt, guards, files, urls, publicUrl: config.PUBLIC_URL });

  const sign = createSignService({
    db,
    clock,
    bus,
    files,
    urls,
    secrets,
    signing,
    recovery,
    cache: signCache,
    signable: (appId, appVerId) => decrypt.signable(appId, appVerId),
    settings: {
      urlTtlSeconds: config.DOWNLOAD_URL_TTL_SECONDS,
      hasDylibs: { iap: config.SIGN_DYLIBS_IAP.length > 0, igg: config.SIGN_DYLIBS_IGG.length > 0 },
      featherIpa: config.FEATHER_IPA,
      featherWaitMs: FEATHER_WAIT_MS,
      renewBeforeMs: config.RENEW_BEFORE_DAYS * 86_400_000,
    },
    log: app.log,
  });
  afterRemoved.push(sign.afterRemoved);
  await app.register(signRoutes, { sign, guards, files, urls, publicUrl: config.PUBLIC_URL });
  // In-process sign workers (docs/architecture.md, Topology); `sideport worker` runs more elsewhere.
  signWorkers.start(config.SIGN_WORKERS);
  app.addHook('onClose', () => signWorkers.stop());
  await app.register(agentRoutes, { agents, jobs, uploadIdleTimeoutMs: config.AGENT_UPLOAD_IDLE_TIMEOUT_MS });
  // Digest cache warm-ups that uploads did not wait for finish before the process ends.
  app.addHook('onClose', () => jobs.settle());
  const checklist = createSetupChecklist({
    config,
    itunes,
    agents,
    identityKind: signingIdentity.kind,
    billingProvider: billingProvider.name,
    storage: files,
  });
  await app.register(adminRoutes, { guards, agents, jobs, catalog, checklist });
  await app.register(eventRoutes, { guards, bus });

  const enrollment = createEnrollmentService({ db, clock, bus, ...enrollmentSettings(config) });
  const registration = createRegistrationService({
    db,
    clock,
    bus,
    registrar: signingIdentity,
    log: app.log,
    metrics: metrics.service,
  });
  await app.register(deviceRoutes, {
    guards,
    enrollment,
    registration,
    audit: catalog.audit,
    publicUrl: config.PUBLIC_URL,
  });
  await app.register(identityRoutes, { guards, signing });

  // Every process returns jobs whose agent went quiet; the claim query skips rows another takes.
  const sweeper = setInterval(() => {
    jobs.sweepExpiredLeases().catch((err: unknown) => app.log.warn({ err }, 'lease sweep failed'));
    signWorkers.sweep().catch((err: unknown) => app.log.warn({ err }, 'sign lease sweep failed'));
  }, 5000);
  sweeper.unref();
  app.addHook('onClose', async () => clearInterval(sweeper));
  // Files nothing uses any more go, at start and periodically (one process at a time sweeps the store).
  if (config.ORPHAN_SWEEP_MINUTES > 0) {
    const stopSweep = fileSweep.start(config.ORPHAN_SWEEP_MINUTES * 60_000);
    app.addHook('onClose', stopSweep);
  }
  // Revoked or expiring certificates and profiles are replaced, and what they signed signed again (docs/sign-service.md).
  if (config.RECOVERY_CHECK_MINUTES > 0) {
    const stopRecovery = recovery.start(config.RECOVERY_CHECK_MINUTES * 60_000);
    app.addHook('onClose', stopRecovery);
  }
  app.addHook('onClose', () => recovery.close());
  // Every process registers paid devices and expires old ones; the claim query skips rows another takes.
  if (config.REGISTRATION_INTERVAL_SECONDS > 0) {
    const stopRegistration = registration.start(config.REGISTRATION_INTERVAL_SECONDS * 1000);
    app.addHook('onClose', stopRegistration);
  }

  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // Public, so every page learns what this server offers and whether a decrypt request can move at
  // all (agentsOnline 0: it waits for an agent).
  app.withTypeProvider<ZodTypeProvider>().get('/api/config', { schema: { response: { 200: publicConfig } } }, async () => {
    const presence = await agents.presence();
    return {
      chatUrl: config.CHAT_URL ?? null,
      channelUrl: config.CHANNEL_URL ?? null,
      signTypes: sign.offeredTypes(),
      decryptPaid: config.DECRYPT_ALLOW_PAID,
      agentsOnline: presence.online,
      agentLastSeenAt: presence.lastSeenAt?.toISOString() ?? null,
    };
  });

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
  // Returned beside the app, not on it: a fastify instance is thenable, so `await` would drop extras.
  return {
    app,
    routes,
    services: { auth, setup, catalog, billing, devices, decrypt, jobs, agents, bus, files, secrets, signing, enrollment, registration, sign, signWorkers, fileSweep, resign, recovery },
  };
}

export type Built = Awaited<ReturnType<typeof buildApp>>;

/** How long GET /api/feather/install waits for a Feather sign under way (a Feather IPA signs in seconds). */
const FEATHER_WAIT_MS = 60_000;

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
      (request.method === 'GET' || request.method === 'HEAD') && !isApiPath(shown) && !shown.startsWith('/assets/');
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
    return reply.code(404).type('text/plain; charset=utf-8').send(`There is no ${request.method} ${what} here.`);
  });
}

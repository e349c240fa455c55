import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { queueStatus } from '@sideport/contracts';
import { currentUser, isAdmin, type Guards } from '../auth/guard.js';
import type { EventBus } from '../../platform/events.js';
import { createMicroCache } from '../../platform/micro-cache.js';
import { countryParam, idParam, keywordParam, pageParam, versionParams } from '../../platform/params.js';
import { entriesFor, normalizeTerm, type CatalogService, type SearchAnswer } from './service.js';

const pageParams = z.object({ page: pageParam });
const anchorQuery = z.object({ anchor: idParam('anchor').optional() });
/** The latest list may name the viewer's country: each version then shows that store's record of its app. */
const latestQuery = anchorQuery.extend({ country: countryParam.optional() });
const queueDeleteQuery = z.object({ country: countryParam.optional() });
const searchParams = z.object({ country: countryParam, '*': keywordParam });

export interface CatalogRoutesDeps {
  catalog: CatalogService;
  guards: Guards;
  /** How long a list page or search answer is reused by this process (0: never). */
  answerCacheMs: number;
  /** When an agent last called (the agents domain). */
  agentSeenAt: () => Promise<Date | null>;
  /** Entry changes from every process: a reused answer must not outlive the change it misses. */
  bus?: Pick<EventBus, 'subscribe'>;
}

interface CachedAnswer {
  json: string;
  anchor?: number | undefined;
}

export async function catalogRoutes(
  app: FastifyInstance,
  { catalog, guards, answerCacheMs, agentSeenAt, bus }: CatalogRoutesDeps,
) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  // Lists and searches are read far more often than they change: reuse the serialized answer briefly.
  const answers = createMicroCache<CachedAnswer>({ ttlMs: answerCacheMs, max: 2000 });
  const searches = createMicroCache<SearchAnswer & { json: string }>({ ttlMs: answerCacheMs, max: 2000 });
  // A page reused after its entry changed would show it as it was, and a list that refetches on
  // the change's live event would take that old state back (docs/architecture.md, Web client).
  const stopListening = bus?.subscribe((message) => {
    if (message.kind !== 'live' || message.event.type !== 'version') return;
    answers.clear();
    searches.clear();
  });
  if (stopListening) app.addHook('onClose', async () => stopListening());
  const sendAnswer = (reply: FastifyReply, answer: CachedAnswer) => {
    if (answer.anchor !== undefined) reply.header('x-list-anchor', String(answer.anchor));
    return reply.type('application/json; charset=utf-8').send(answer.json);
  };

  r.get(
    '/api/latest/:page',
    { schema: { params: pageParams, querystring: latestQuery } },
    async (request, reply) => {
      const { page } = request.params;
      const { anchor, country } = request.query;
      const answer = await answers.get(`latest:${page}:${anchor ?? ''}:${country ?? ''}`, async () => {
        const result = await catalog.latest(page, anchor, country);
        return { json: JSON.stringify(result.entries), anchor: result.anchor };
      });
      return sendAnswer(reply, answer);
    },
  );
  r.get(
    '/api/queue/:page',
    { schema: { params: pageParams, querystring: anchorQuery } },
    async (request, reply) => {
      const { page } = request.params;
      const { anchor } = request.query;
      const answer = await answers.get(`queue:${page}:${anchor ?? ''}`, async () => {
        const result = await catalog.queue(page, anchor);
        return { json: JSON.stringify(result.entries), anchor: result.anchor };
      });
      return sendAnswer(reply, answer);
    },
  );

  // Whether requests wait for an agent: the queue says so rather than look stuck.
  r.get('/api/queue-status', { schema: { response: { 200: queueStatus } } }, async () =>
    catalog.queueStatus(await agentSeenAt()),
  );

  r.get(
    '/api/search/:country/*',
    { schema: { params: searchParams }, onRequest: guards.requireUser },
    async (request, reply) => {
      const { country, '*': keyword } = request.params;
      const found = await searches.get(`search:${country}:${normalizeTerm(keyword)}`, async () => {
        const result = await catalog.search(country, keyword);
        return { ...result, json: JSON.stringify(result.entries) };
      });
      // The answer is shared; an agent's reason on an entry is its requester's (and admins') to see.
      const user = currentUser(request);
      const json = found.privateReasons.length
        ? JSON.stringify(entriesFor(found, { id: user.id, isAdmin: isAdmin(user) }))
        : found.json;
      return sendAnswer(reply, { json });
    },
  );

  r.delete(
    '/api/app/:app_id/:app_ver_id',
    { schema: { params: versionParams }, onRequest: guards.requireAdmin },
    async (request, reply) => {
      await catalog.deleteDone(currentUser(request).id, request.params.app_id, request.params.app_ver_id);
      answers.clear();
      searches.clear();
      return reply.code(204).send();
    },
  );

  // app_ver_id 0 names an app-level request whose version the agent has not reported yet; it is
  // one country's, which `country` may name (every country's otherwise).
  const queueTarget = (appVerId: number) => (appVerId === 0 ? null : appVerId);
  r.delete(
    '/api/queue/:app_id/:app_ver_id',
    { schema: { params: versionParams, querystring: queueDeleteQuery }, onRequest: guards.requireAdmin },
    async (request, reply) => {
      const { app_id, app_ver_id } = request.params;
      await catalog.deleteQueued(currentUser(request).id, app_id, queueTarget(app_ver_id), {
        blacklist: false,
        country: request.query.country,
      });
      answers.clear();
      searches.clear();
      return reply.code(204).send();
    },
  );

  r.delete(
    '/api/queue/black/:app_id/:app_ver_id',
    { schema: { params: versionParams }, onRequest: guards.requireAdmin },
    async (request, reply) => {
      const { app_id, app_ver_id } = request.params;
      await catalog.deleteQueued(currentUser(request).id, app_id, queueTarget(app_ver_id), {
        blacklist: true,
      });
      answers.clear();
      searches.clear();
      return reply.code(204).send();
    },
  );
}

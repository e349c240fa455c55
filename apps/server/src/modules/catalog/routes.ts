import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { currentUser, type Guards } from '../auth/guard.js';
import { createMicroCache } from '../../platform/micro-cache.js';
import { countryParam, idParam, keywordParam, pageParam, versionParams } from '../../platform/params.js';
import { normalizeTerm, type CatalogService } from './service.js';

const pageParams = z.object({ page: pageParam });
const anchorQuery = z.object({ anchor: idParam('anchor').optional() });
const searchParams = z.object({ country: countryParam, '*': keywordParam });

export interface CatalogRoutesDeps {
  catalog: CatalogService;
  guards: Guards;
  /** How long a list page or search answer is reused by this process (0: never). */
  answerCacheMs: number;
}

interface CachedAnswer {
  json: string;
  anchor?: number | undefined;
}

export async function catalogRoutes(app: FastifyInstance, { catalog, guards, answerCacheMs }: CatalogRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  // Lists and searches are read far more often than they change: reuse the serialized answer briefly.
  const answers = createMicroCache<CachedAnswer>({ ttlMs: answerCacheMs, max: 2000 });
  const sendAnswer = (reply: FastifyReply, answer: CachedAnswer) => {
    if (answer.anchor !== undefined) reply.header('x-list-anchor', String(answer.anchor));
    return reply.type('application/json; charset=utf-8').send(answer.json);
  };

  for (const list of ['latest', 'queue'] as const) {
    r.get(`/api/${list}/:page`, { schema: { params: pageParams, querystring: anchorQuery } }, async (request, reply) => {
      const { page } = request.params;
      const { anchor } = request.query;
      const answer = await answers.get(`${list}:${page}:${anchor ?? ''}`, async () => {
        const result = await catalog[list](page, anchor);
        return { json: JSON.stringify(result.entries), anchor: result.anchor };
      });
      return sendAnswer(reply, answer);
    });
  }

  r.get('/api/search/:country/*', { schema: { params: searchParams }, onRequest: guards.requireUser }, async (request, reply) => {
    const { country, '*': keyword } = request.params;
    const answer = await answers.get(`search:${country}:${normalizeTerm(keyword)}`, async () => ({
      json: JSON.stringify(await catalog.search(country, keyword)),
    }));
    return sendAnswer(reply, answer);
  });

  r.delete('/api/app/:app_id/:app_ver_id', { schema: { params: versionParams }, onRequest: guards.requireAdmin }, async (request, reply) => {
    await catalog.deleteDone(currentUser(request).id, request.params.app_id, request.params.app_ver_id);
    answers.clear();
    return reply.code(204).send();
  });

  // app_ver_id 0 names an app-level request whose version the agent has not reported yet.
  const queueTarget = (appVerId: number) => (appVerId === 0 ? null : appVerId);
  r.delete('/api/queue/:app_id/:app_ver_id', { schema: { params: versionParams }, onRequest: guards.requireAdmin }, async (request, reply) => {
    const { app_id, app_ver_id } = request.params;
    await catalog.deleteQueued(currentUser(request).id, app_id, queueTarget(app_ver_id), { blacklist: false });
    answers.clear();
    return reply.code(204).send();
  });

  r.delete('/api/queue/black/:app_id/:app_ver_id', { schema: { params: versionParams }, onRequest: guards.requireAdmin }, async (request, reply) => {
    const { app_id, app_ver_id } = request.params;
    await catalog.deleteQueued(currentUser(request).id, app_id, queueTarget(app_ver_id), { blacklist: true });
    answers.clear();
    return reply.code(204).send();
  });
}

import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { COUNTRIES } from '@sideport/contracts';
import { currentUser, type Guards } from '../auth/guard.js';
import type { CatalogService } from './service.js';

const MAX_KEYWORD_LENGTH = 100;

const pageParams = z.object({
  page: z.coerce
    .number({ error: 'Page must be a whole number from 0.' })
    .int({ error: 'Page must be a whole number from 0.' })
    .min(0, { error: 'Page must be a whole number from 0.' })
    .max(100_000, { error: 'Page is too large.' }),
});
const anchorQuery = z.object({
  anchor: z.coerce.number({ error: 'anchor must be a number.' }).int().nonnegative().optional(),
});
const idParam = (name: string) =>
  z
    .string()
    .regex(/^\d{1,19}$/, { error: `${name} must be a number.` })
    .transform(Number);
const searchParams = z.object({
  country: z
    .string()
    .transform((c) => c.toUpperCase())
    .pipe(z.enum(COUNTRIES, { error: `Country must be one of ${COUNTRIES.join(', ')}.` })),
  '*': z
    .string()
    .transform((k) => k.trim())
    .pipe(
      z
        .string()
        .min(1, { error: 'Enter a keyword to search.' })
        .max(MAX_KEYWORD_LENGTH, { error: `Keywords are at most ${MAX_KEYWORD_LENGTH} characters.` }),
    ),
});
const versionParams = z.object({ app_id: idParam('app_id'), app_ver_id: idParam('app_ver_id') });

export async function catalogRoutes(app: FastifyInstance, { catalog, guards }: { catalog: CatalogService; guards: Guards }) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/api/latest/:page', { schema: { params: pageParams, querystring: anchorQuery } }, async (request, reply) => {
    const { entries, anchor } = await catalog.latest(request.params.page, request.query.anchor);
    if (anchor !== undefined) reply.header('x-list-anchor', String(anchor));
    return entries;
  });

  r.get('/api/queue/:page', { schema: { params: pageParams, querystring: anchorQuery } }, async (request, reply) => {
    const { entries, anchor } = await catalog.queue(request.params.page, request.query.anchor);
    if (anchor !== undefined) reply.header('x-list-anchor', String(anchor));
    return entries;
  });

  r.get('/api/search/:country/*', { schema: { params: searchParams }, onRequest: guards.requireUser }, async (request) =>
    catalog.search(request.params.country, request.params['*']),
  );

  r.delete('/api/app/:app_id/:app_ver_id', { schema: { params: versionParams }, onRequest: guards.requireAdmin }, async (request, reply) => {
    await catalog.deleteDone(currentUser(request).id, request.params.app_id, request.params.app_ver_id);
    return reply.code(204).send();
  });

  // app_ver_id 0 names an app-level request whose version the agent has not reported yet.
  const queueTarget = (appVerId: number) => (appVerId === 0 ? null : appVerId);
  r.delete('/api/queue/:app_id/:app_ver_id', { schema: { params: versionParams }, onRequest: guards.requireAdmin }, async (request, reply) => {
    const { app_id, app_ver_id } = request.params;
    await catalog.deleteQueued(currentUser(request).id, app_id, queueTarget(app_ver_id), { blacklist: false });
    return reply.code(204).send();
  });

  r.delete('/api/queue/black/:app_id/:app_ver_id', { schema: { params: versionParams }, onRequest: guards.requireAdmin }, async (request, reply) => {
    const { app_id, app_ver_id } = request.params;
    await catalog.deleteQueued(currentUser(request).id, app_id, queueTarget(app_ver_id), { blacklist: true });
    return reply.code(204).send();
  });
}

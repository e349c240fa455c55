import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  appUpdate,
  appUpdates,
  autoUpdateChange,
  autoUpdateCapChange,
  autoUpdateSettings,
  updateCheckResult,
  updatesOverview,
} from '@sideport/contracts';
import { idParam, signTypeParam } from '../../platform/params.js';
import { currentUser, type Guards } from '../auth/guard.js';
import type { UpdatesService } from './service.js';

export interface UpdateRoutesDeps {
  guards: Guards;
  updates: UpdatesService;
}

const updateParams = z.object({ app_id: idParam('app_id'), type: signTypeParam });

/**
 * My page's Updates (the signed-in owner's installed apps with a newer store version, the Update
 * action, automatic updates) and the admin's count of updates waiting.
 */
export async function updateRoutes(app: FastifyInstance, { guards, updates }: UpdateRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const signedIn = guards.requireUser;

  r.get('/api/updates', { schema: { response: { 200: appUpdates } }, onRequest: signedIn }, async (request) =>
    updates.list(currentUser(request).id),
  );

  r.post(
    '/api/updates/:app_id/:type',
    { schema: { params: updateParams, response: { 200: appUpdate } }, onRequest: signedIn },
    async (request) => updates.start(currentUser(request).id, request.params.app_id, request.params.type),
  );

  r.get(
    '/api/updates/auto',
    { schema: { response: { 200: autoUpdateSettings } }, onRequest: signedIn },
    async (request) => updates.autoSettings(currentUser(request).id),
  );

  r.put(
    '/api/updates/auto',
    { schema: { body: autoUpdateChange, response: { 200: autoUpdateSettings } }, onRequest: signedIn },
    async (request) => {
      const { app_id, enabled } = request.body;
      return updates.setAuto(currentUser(request).id, app_id === null ? null : Number(app_id), enabled);
    },
  );

  r.get(
    '/api/admin/updates',
    { schema: { response: { 200: updatesOverview } }, onRequest: guards.requireAdmin },
    async () => updates.overview(),
  );

  r.put(
    '/api/admin/updates/cap',
    {
      schema: { body: autoUpdateCapChange, response: { 200: updatesOverview } },
      onRequest: guards.requireAdmin,
    },
    async (request) => updates.setAutoCap(request.body.cap, currentUser(request).id),
  );

  // The operator's 'check now': the periodic pass, at once (apps checked within the interval are not asked again).
  r.post(
    '/api/admin/updates/check',
    { schema: { response: { 200: updateCheckResult } }, onRequest: guards.requireAdmin },
    async () => {
      const pass = await updates.runPass();
      return {
        asked: pass.asked,
        store_calls: pass.calls,
        changed: pass.changed.length,
        automatic: pass.automatic,
      };
    },
  );
}

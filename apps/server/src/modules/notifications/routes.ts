import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import {
  notificationChoiceChange,
  notificationChoices,
  notificationList,
  pushSubscriptionBody,
  pushUnsubscribeBody,
  vapidKeyAnswer,
} from '@sideport/contracts';
import { currentUser, type Guards } from '../auth/guard.js';
import type { NotificationsService } from './service.js';

export interface NotificationRoutesDeps {
  guards: Guards;
  notifications: NotificationsService;
}

/**
 * The signed-in person's notifications: the bell's list, the per-kind choices of My page, and
 * this browser's Web Push subscription (with the VAPID key to make it).
 */
export async function notificationRoutes(
  app: FastifyInstance,
  { guards, notifications }: NotificationRoutesDeps,
) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const signedIn = guards.requireUser;

  r.get(
    '/api/notifications',
    { schema: { response: { 200: notificationList } }, onRequest: signedIn },
    async (request) => notifications.list(currentUser(request).id),
  );

  r.post('/api/notifications/read', { onRequest: signedIn }, async (request, reply) => {
    await notifications.markRead(currentUser(request).id);
    return reply.code(204).send();
  });

  r.get(
    '/api/notifications/choices',
    { schema: { response: { 200: notificationChoices } }, onRequest: signedIn },
    async (request) => notifications.choices(currentUser(request).id),
  );

  r.put(
    '/api/notifications/choices',
    {
      schema: { body: notificationChoiceChange, response: { 200: notificationChoices } },
      onRequest: signedIn,
    },
    async (request) => notifications.setChoices(currentUser(request).id, request.body),
  );

  r.get(
    '/api/notifications/vapid-key',
    { schema: { response: { 200: vapidKeyAnswer } }, onRequest: signedIn },
    async () => notifications.vapidKey(),
  );

  r.post(
    '/api/notifications/subscriptions',
    { schema: { body: pushSubscriptionBody }, onRequest: signedIn },
    async (request, reply) => {
      await notifications.subscribe(currentUser(request).id, request.body);
      return reply.code(204).send();
    },
  );

  r.delete(
    '/api/notifications/subscriptions',
    { schema: { body: pushUnsubscribeBody }, onRequest: signedIn },
    async (request, reply) => {
      await notifications.unsubscribe(currentUser(request).id, request.body.endpoint);
      return reply.code(204).send();
    },
  );
}

import { queryOptions } from '@tanstack/react-query';
import {
  noContent,
  notificationChoices,
  notificationList,
  vapidKeyAnswer,
  type NotificationKind,
} from '@sideport/contracts';
import { notificationKeys } from '../../entries/query-keys';
import { api } from '../../lib/api';

/** GET /api/notifications: the bell's list and unread count (live 'notification' events refetch it). */
export const notificationsQuery = (isLogin: boolean) =>
  queryOptions({
    queryKey: notificationKeys.list,
    queryFn: () => api('/api/notifications', notificationList),
    enabled: isLogin,
  });

/** POST /api/notifications/read: every notification of the person read. */
export const markAllRead = () => api('/api/notifications/read', noContent, { method: 'POST' });

/** GET /api/notifications/choices: each kind on or off. */
export const choicesQuery = queryOptions({
  queryKey: notificationKeys.choices,
  queryFn: () => api('/api/notifications/choices', notificationChoices),
});

/** PUT /api/notifications/choices: one kind on or off. */
export const setChoice = (kind: NotificationKind, enabled: boolean) =>
  api('/api/notifications/choices', notificationChoices, { method: 'PUT', body: { [kind]: enabled } });

/** GET /api/notifications/vapid-key: the key pushManager.subscribe takes. */
export const vapidKey = () => api('/api/notifications/vapid-key', vapidKeyAnswer);

/** POST /api/notifications/subscriptions: this browser's PushSubscription. */
export const saveSubscription = (subscription: PushSubscriptionJSON) =>
  api('/api/notifications/subscriptions', noContent, { method: 'POST', body: subscription });

/** DELETE /api/notifications/subscriptions: this browser's subscription, by its endpoint. */
export const removeSubscription = (endpoint: string) =>
  api('/api/notifications/subscriptions', noContent, { method: 'DELETE', body: { endpoint } });

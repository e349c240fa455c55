import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  addDeveloperAccountRequest,
  developerAccount,
  developerAccounts,
  updateDeveloperAccountRequest,
} from '@sideport/contracts';
import { fail } from '../../../platform/errors.js';
import { idParam } from '../../../platform/params.js';
import { currentUser, type Guards } from '../../auth/guard.js';
import type { AccountPool } from './account-pool.js';

export interface PoolRoutesDeps {
  guards: Guards;
  /** undefined with the dev identity: one identity, no developer accounts, no device limits. */
  pool: Pick<AccountPool, 'list' | 'add' | 'disable' | 'enable' | 'setRenewal'> | undefined;
}

const idParams = z.object({ id: idParam('id') });

const devIdentityOnly = () => fail('NO_ACCOUNT_POOL');

/**
 * The admin console's pool of developer accounts (docs/sign-service.md, A pool of developer
 * accounts): each account's slots per family and membership renewal; a key added, an account
 * disabled or enabled, a renewal date set. Every change is in the audit log.
 */
export async function poolRoutes(app: FastifyInstance, { guards, pool }: PoolRoutesDeps) {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const admin = { onRequest: guards.requireAdmin };
  const inUse = () => {
    if (!pool) throw devIdentityOnly();
    return pool;
  };

  r.get('/api/admin/accounts', { ...admin, schema: { response: { 200: developerAccounts } } }, async () =>
    pool ? pool.list() : [],
  );

  r.post(
    '/api/admin/accounts',
    { ...admin, schema: { body: addDeveloperAccountRequest, response: { 201: developerAccount } } },
    async (request, reply) => reply.code(201).send(await inUse().add(request.body, currentUser(request).id)),
  );

  r.patch(
    '/api/admin/accounts/:id',
    {
      ...admin,
      schema: { params: idParams, body: updateDeveloperAccountRequest, response: { 200: developerAccount } },
    },
    async (request) =>
      inUse().setRenewal(request.params.id, request.body.membership_renews_at, currentUser(request).id),
  );

  r.post(
    '/api/admin/accounts/:id/disable',
    { ...admin, schema: { params: idParams, response: { 200: developerAccount } } },
    async (request) => inUse().disable(request.params.id, currentUser(request).id),
  );

  r.post(
    '/api/admin/accounts/:id/enable',
    { ...admin, schema: { params: idParams, response: { 200: developerAccount } } },
    async (request) => inUse().enable(request.params.id, currentUser(request).id),
  );
}

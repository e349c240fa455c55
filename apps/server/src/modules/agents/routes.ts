import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  claimAnswer,
  claimRequest,
  failAnswer,
  failRequest,
  heartbeatAnswer,
  heartbeatRequest,
  JOB_KINDS,
  uploadAnswer,
  uploadQuery,
  versionsRequest,
} from '@sideport/contracts';
import { fail } from '../../platform/errors.js';
import type { AgentRef, JobService } from '../decrypt/jobs.js';
import type { AgentService } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the agent routes' bearer-token check. */
    agent?: AgentRef;
  }
}

export interface AgentRoutesDeps {
  agents: Pick<AgentService, 'authenticate' | 'markSeen'>;
  jobs: JobService;
  /** How long an upload may pause before it is refused 408 (AGENT_UPLOAD_IDLE_TIMEOUT_MS). */
  uploadIdleTimeoutMs: number;
}

const leaseParams = z.object({ id: z.string().max(40) });

/** The one content type an IPA upload is sent with (docs/agent-protocol.md). */
const IPA_CONTENT_TYPE = 'application/octet-stream';

function currentAgent(request: FastifyRequest): AgentRef {
  if (!request.agent) throw fail('AGENT_TOKEN_MISSING');
  return request.agent;
}

/**
 * The decrypt agent protocol (docs/agent-protocol.md), exempt from the cross-site check: every call
 * carries the agent's bearer token instead of a cookie. A token unknown or revoked gets 401.
 */
export async function agentRoutes(
  app: FastifyInstance,
  { agents, jobs, uploadIdleTimeoutMs }: AgentRoutesDeps,
) {
  const r = app.withTypeProvider<ZodTypeProvider>();

  app.addHook('onRequest', async (request) => {
    const header = request.headers.authorization;
    const token =
      typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
    const agent = await agents.authenticate(token);
    if (!agent) throw fail('AGENT_TOKEN_INVALID');
    request.agent = agent;
  });
  // Before the answer leaves (at most one write per agent every few seconds), so whoever the agent
  // tells next (a queue page, the setup checklist) already sees it as online.
  app.addHook('onSend', async (request, reply) => {
    if (request.agent && reply.statusCode < 400) {
      await agents
        .markSeen(request.agent.id)
        .catch((err: unknown) => request.log.warn({ err }, 'could not record the agent as seen'));
    }
  });

  // A long-polling claim would hold a closing server up for its whole wait: it answers at once.
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());

  r.post(
    '/api/agent/claim',
    { schema: { body: claimRequest.optional(), response: { 200: claimAnswer } } },
    async (request, reply) => {
      const body = request.body ?? {};
      const agent = currentAgent(request);
      // An agent that went away mid-wait (killed, restarted) must not be handed a job nobody works
      // on until its lease runs out: its wait ends with its connection.
      const gone = new AbortController();
      reply.raw.on('close', () => {
        if (!reply.raw.writableEnded) gone.abort();
      });
      const job = await jobs.claim(
        agent,
        body.kinds ?? JOB_KINDS,
        body.wait_seconds ?? 0,
        AbortSignal.any([closing.signal, gone.signal]),
      );
      if (job && gone.signal.aborted) {
        await jobs.unclaim(agent, job.id);
        return { job: null };
      }
      return { job };
    },
  );

  r.post(
    '/api/agent/jobs/:id/heartbeat',
    { schema: { params: leaseParams, body: heartbeatRequest, response: { 200: heartbeatAnswer } } },
    async (request) => jobs.heartbeat(currentAgent(request), request.params.id, request.body),
  );

  r.post(
    '/api/agent/jobs/:id/fail',
    { schema: { params: leaseParams, body: failRequest, response: { 200: failAnswer } } },
    async (request) => jobs.fail(currentAgent(request), request.params.id, request.body),
  );

  r.post(
    '/api/agent/jobs/:id/versions',
    { schema: { params: leaseParams, body: versionsRequest } },
    async (request, reply) => {
      await jobs.submitVersions(currentAgent(request), request.params.id, request.body.versions);
      return reply.code(204).send();
    },
  );

  // The IPA arrives as a raw stream and is written to disk as it comes, never held whole. Its own
  // scope takes the body of any content type unread, so a wrong type gets this route's sentence
  // (naming the type it takes), not the JSON routes' one.
  await app.register(async (upload) => {
    upload.removeAllContentTypeParsers();
    upload.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    upload.withTypeProvider<ZodTypeProvider>().put(
      '/api/agent/jobs/:id/ipa',
      {
        schema: { params: leaseParams, querystring: uploadQuery, response: { 200: uploadAnswer } },
        // No overall bound: an IPA of gigabytes may take long; its pauses and size are bounded.
        config: { bodyIdleTimeoutMs: uploadIdleTimeoutMs, bodyTimeoutMs: 0 },
      },
      async (request) => {
        const mediaType = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
        if (mediaType !== IPA_CONTENT_TYPE) {
          throw fail('UNSUPPORTED_MEDIA_TYPE', IPA_CONTENT_TYPE);
        }
        const declared = request.headers['content-length'];
        return jobs.acceptUpload(currentAgent(request), request.params.id, request.body as Readable, {
          ...request.query,
          ...(declared !== undefined ? { declaredBytes: Number(declared) } : {}),
        });
      },
    );
  });
}

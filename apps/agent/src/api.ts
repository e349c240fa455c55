import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import {
  claimAnswer,
  failAnswer,
  heartbeatAnswer,
  uploadAnswer,
  type AgentJob,
  type FailAnswer,
  type FailRequest,
  type HeartbeatAnswer,
  type HeartbeatRequest,
  type JobKind,
  type StoreVersion,
  type UploadAnswer,
  type UploadQuery,
} from '@sideport/contracts';
import { AGENT_VERSION } from './version.js';

/**
 * How a call to the server can go wrong, each kind with what the agent does next: the one list of
 * the agent's errors (docs/agent-protocol.md). api.test.ts checks every kind is produced.
 */
export const API_ERROR_KINDS = {
  /** The server is unreachable, restarting or overloaded (network error, 5xx, 429, 408). */
  transient: 'try again later, with backoff',
  /** 409: the job is no longer this agent's. */
  'lease-lost': 'stop working on the job and drop its files',
  /** 410: the job was finished under this agent's own lease (its upload was accepted). */
  finished: 'nothing is left to do or report for the job; it was not taken back',
  /** 401: the token is unknown or revoked. */
  unauthorized: 'stop: nothing will work until an admin makes a new token',
  /** Any other answer, with the server's sentence. */
  refused: 'do not repeat the same call; report the sentence',
  /** This agent stopped the call itself (shutdown, a lost lease). */
  aborted: 'nothing: whoever stopped the call knows why',
} as const;

export type ApiErrorKind = keyof typeof API_ERROR_KINDS;

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly kind: ApiErrorKind,
    message: string,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const isApiError = (err: unknown, kind?: ApiErrorKind): err is ApiError =>
  err instanceof ApiError && (kind === undefined || err.kind === kind);

/** The error of a non-2xx answer (exported for its test). */
export function errorOfStatus(status: number, body: string): ApiError {
  const sentence = body.trim().slice(0, 500) || `HTTP ${status}`;
  if (status === 409) return new ApiError('lease-lost', sentence, status);
  if (status === 410) return new ApiError('finished', sentence, status);
  if (status === 401) return new ApiError('unauthorized', sentence, status);
  if (status >= 500 || status === 429 || status === 408)
    return new ApiError('transient', `the server answered ${status}: ${sentence}`, status);
  return new ApiError('refused', sentence, status);
}

function errorOfFailure(err: unknown, signal: AbortSignal | undefined): ApiError {
  if (signal?.aborted) return new ApiError('aborted', 'the call was stopped', undefined, { cause: err });
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const detail = cause?.code ?? cause?.message ?? (err as Error).message;
  return new ApiError('transient', `the server is unreachable (${detail})`, undefined, { cause: err });
}

/** A contracts schema, as far as this client uses it. */
interface Schema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export interface UploadOptions {
  signal?: AbortSignal;
  /** Called as the file is read into the request. */
  onProgress?: (sentBytes: number, totalBytes: number) => void;
}

/** The agent protocol under /api/agent/ (the server's agent routes), with the agent's bearer token. */
export function createAgentApi({ server, token }: { server: URL; token: string }) {
  // A trailing slash keeps a server under a path prefix (https://host/sideport/) working.
  const base = new URL(server.href.endsWith('/') ? server.href : `${server.href}/`);
  const endpoint = (path: string) => new URL(`api/agent/${path}`, base);
  const headers = { authorization: `Bearer ${token}`, 'user-agent': `sideport-agent/${AGENT_VERSION}` };
  const jobPath = (jobId: string, action: string) => `jobs/${encodeURIComponent(jobId)}/${action}`;

  async function call<T>(
    path: string,
    body: unknown,
    answer: Schema<T> | undefined,
    options: { signal?: AbortSignal; timeoutMs: number },
  ): Promise<T> {
    const signal = options.signal
      ? AbortSignal.any([options.signal, AbortSignal.timeout(options.timeoutMs)])
      : AbortSignal.timeout(options.timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetch(endpoint(path), {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal,
      });
      text = await response.text();
    } catch (err) {
      throw errorOfFailure(err, options.signal);
    }
    if (!response.ok) throw errorOfStatus(response.status, text);
    if (!answer) return undefined as T;
    const parsed = answer.safeParse(parseJson(text));
    if (!parsed.success) {
      throw new ApiError(
        'refused',
        `the server's answer to ${path} is not what this agent understands (${text.slice(0, 200)})`,
        response.status,
      );
    }
    return parsed.data;
  }

  return {
    /** The next job, or null after waiting up to `waitSeconds` (a long poll). */
    async claim(
      kinds: readonly JobKind[],
      waitSeconds: number,
      signal?: AbortSignal,
    ): Promise<AgentJob | null> {
      const answer = await call('claim', { kinds, wait_seconds: waitSeconds }, claimAnswer, {
        timeoutMs: (waitSeconds + 30) * 1000,
        ...(signal ? { signal } : {}),
      });
      return answer.job;
    },

    heartbeat(jobId: string, report: HeartbeatRequest, signal?: AbortSignal): Promise<HeartbeatAnswer> {
      return call(jobPath(jobId, 'heartbeat'), report, heartbeatAnswer, {
        timeoutMs: 30_000,
        ...(signal ? { signal } : {}),
      });
    },

    fail(jobId: string, failure: FailRequest, signal?: AbortSignal): Promise<FailAnswer> {
      return call(jobPath(jobId, 'fail'), failure, failAnswer, {
        timeoutMs: 30_000,
        ...(signal ? { signal } : {}),
      });
    },

    async versions(jobId: string, versions: StoreVersion[], signal?: AbortSignal): Promise<void> {
      await call(jobPath(jobId, 'versions'), { versions }, undefined, {
        timeoutMs: 60_000,
        ...(signal ? { signal } : {}),
      });
    },

    /**
     * Streams the file as the request body, a chunk at a time (never the whole file in memory),
     * with its length declared so the server can tell a cut-off upload from a complete one.
     */
    async upload(
      jobId: string,
      file: string,
      query: UploadQuery,
      options: UploadOptions = {},
    ): Promise<UploadAnswer> {
      const totalBytes = (await stat(file)).size;
      const url = endpoint(jobPath(jobId, 'ipa'));
      for (const [key, value] of Object.entries(query))
        if (value !== undefined) url.searchParams.set(key, value);
      const transport = url.protocol === 'https:' ? https : http;
      const text = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const request = transport.request(url, {
          method: 'PUT',
          headers: {
            ...headers,
            'content-type': 'application/octet-stream',
            'content-length': String(totalBytes),
          },
          ...(options.signal ? { signal: options.signal } : {}),
        });
        request.on('error', (err) => reject(errorOfFailure(err, options.signal)));
        request.on('response', (response) => {
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            // Answers are a sentence or a small JSON object; keep no more than that.
            if (size < 65_536) chunks.push(chunk);
            size += chunk.length;
          });
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
          );
          response.on('error', (err) => reject(errorOfFailure(err, options.signal)));
        });
        const source = createReadStream(file);
        let sentBytes = 0;
        source.on('data', (chunk) => {
          sentBytes += chunk.length;
          options.onProgress?.(sentBytes, totalBytes);
        });
        source.on('error', (err) => request.destroy(err));
        source.pipe(request);
      });
      if (text.status < 200 || text.status >= 300) throw errorOfStatus(text.status, text.body);
      const parsed = uploadAnswer.safeParse(parseJson(text.body));
      if (!parsed.success)
        throw new ApiError(
          'refused',
          `the server's answer to the upload is not what this agent understands (${text.body.slice(0, 200)})`,
          text.status,
        );
      return parsed.data;
    },
  };
}

export type AgentApi = ReturnType<typeof createAgentApi>;

import { Agent, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { badRequests, badSegment, type FuzzCase, type FuzzRoute } from './test/bad-input.js';
import {
  changedTables,
  createTableDigest,
  differingTables,
  snapshotDatabase,
  type DatabaseSnapshot,
} from './test/db-snapshot.js';
import { oneDatabase } from './test/harness.js';
import { openRaw, parseRawAnswer } from './test/raw-http.js';
import { ROUTE_ACCESS, type Fixtures } from './test/route-access.js';
import {
  CONFIGURATIONS,
  exampleRequest,
  identityHeaders,
  openRouteSuite,
  SAME_ORIGIN,
  SECRET_OUTSIDE_WEB_ROOT,
  SUITE_BODY_IDLE_TIMEOUT_MS,
  type RouteSuite,
} from './test/route-suite.js';

/**
 * Bad input for every route (src/test/bad-input.ts says what): the canonical case of each class
 * for each parameter and field, then FUZZ_RUNS generated ones. `npm test` generates a dozen per
 * route (the canonical cases cover every class; the generated ones vary them, with a new seed each
 * run); `npm run fuzz` generates 1,000 and prints, per route, the cases, those that were valid
 * after all and the 5xx answers (the goal is 0). FUZZ_SEED repeats a run; failures print it.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));

interface RouteReport {
  database: string;
  route: string;
  cases: number;
  /** Generated values that were valid input after all, answered 2xx or 3xx. */
  accepted: number;
  serverErrors: number;
  kinds: Set<string>;
}
const report: RouteReport[] = [];

const BODY_LIMIT_BYTES = 64 * 1024;

interface Answer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * Sends a case over a real connection, its path byte for byte: fastify's inject would resolve
 * dot segments and re-escape the path first, as a WHATWG URL does, and hide what a client can send.
 */
function send(port: number, agent: Agent, c: FuzzCase, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        agent,
        method: c.method,
        path: c.url,
        headers: { ...headers, ...c.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            statusCode: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(c.payload);
  });
}

/** Why an answer is not a short text/plain sentence with a 4xx status, or undefined when it is. */
function sentenceProblem(res: Answer): string | undefined {
  if (res.statusCode < 400 || res.statusCode >= 500) return `status ${res.statusCode}`;
  if (res.headers['content-type'] !== 'text/plain; charset=utf-8')
    return `content-type ${String(res.headers['content-type'])}`;
  const body = res.body;
  if (body.length === 0 || body.length > 300) return `a body of ${body.length} characters`;
  if (/[\r\n]/.test(body) || /^[[{<]/.test(body) || body.includes('    at ') || !/[.?!]$/.test(body)) {
    return `not a sentence: ${body.slice(0, 80)}`;
  }
  return undefined;
}

/** Pages of the web app: anything but a file inside its folder, the app itself or a sentence is a leak. */
function pageProblem(res: Answer): string | undefined {
  if (res.body.includes(SECRET_OUTSIDE_WEB_ROOT)) return 'served a file outside the web root';
  if (res.statusCode >= 500) return `status ${res.statusCode}`;
  if (res.statusCode >= 400) return sentenceProblem(res);
  const type = String(res.headers['content-type']);
  if (res.statusCode === 200 && !/^(text\/html|application\/javascript|text\/javascript)/.test(type))
    return `served ${type}`;
  return undefined;
}

const isApiAddress = (url: string) => {
  try {
    return decodeURIComponent(url.split('?', 1)[0]!).startsWith('/api/');
  } catch {
    return true; // refused before routing, with a sentence
  }
};

const pageCases = fc.array(badSegment, { minLength: 1, maxLength: 3 }).map((segments): FuzzCase => ({
  kind: 'page path',
  method: 'GET',
  url: `/${segments.join('/')}`,
  headers: {},
}));

const describeCase = (c: FuzzCase) =>
  `${c.method} ${c.url.slice(0, 160)}${c.url.length > 160 ? '…' : ''}${c.payload === undefined ? '' : ` body ${c.payload.slice(0, 80)}`}`;

// Validation answers before any query: one database (test/harness.ts, oneDatabase, says which).
describe.each([oneDatabase])('bad input on %s', (kind) => {
  const checkedInDev = new Set<string>();

  describe.each(CONFIGURATIONS)('with %s billing', (configuration) => {
    let suite: RouteSuite;
    let port: number;
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    beforeAll(async () => {
      suite = await openRouteSuite(kind, configuration);
      await suite.t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (suite.t.app.server.address() as AddressInfo).port;
    });
    afterAll(async () => {
      agent.destroy();
      await suite.close();
    });

    it.each(Object.keys(ROUTE_ACCESS))(
      '%s answers every bad request with a 4xx sentence and changes nothing',
      async (key) => {
        const [method, pattern] = key.split(' ') as [string, string];
        const registered = suite.t.routes.find((r) => r.method === method && r.url === pattern);
        if (!registered || (configuration === 'stripe' && checkedInDev.has(key))) return;
        if (configuration === 'dev') checkedInDev.add(key);

        const entry = ROUTE_ACCESS[key]!;
        // A stream answers a valid request with a response that never ends; its input is the session alone.
        if (entry.stream) return;
        const example = exampleRequest(method, entry, await suite.fixtures());
        const identity = identityHeaders(suite, entry);
        const isPage = entry.access === 'page';
        const route: FuzzRoute = {
          method,
          pattern,
          schema: registered.schema as FuzzRoute['schema'],
          example: { url: String(example.url), payload: example.payload },
          bodyLimitBytes: BODY_LIMIT_BYTES,
        };
        const seed = SEED + [...key].reduce((h, c) => (h * 31 + c.charCodeAt(0)) | 0, 0);
        const generated = isPage ? { arbitrary: pageCases, canonical: [] } : badRequests(route);
        const cases = [...generated.canonical, ...fc.sample(generated.arbitrary, { numRuns: RUNS, seed })];

        const before = await snapshotDatabase(suite.t.database.db);
        const digest = await createTableDigest(suite.t.database.db);
        const failures: string[] = [];
        let serverErrors = 0;
        let accepted = 0;
        let last = await digest();
        for (const c of cases) {
          const res = await send(port, agent, c, { ...SAME_ORIGIN, ...identity }).catch(
            (err: Error): Answer => ({ statusCode: 0, headers: {}, body: `no answer: ${err.message}` }),
          );
          const now = await digest();
          const changed = differingTables(last, now);
          last = now;
          if (res.statusCode >= 500) serverErrors++;
          // A GET of any address outside the API is a page of the web app (history fallback).
          const page = isPage || (c.method === 'GET' && !isApiAddress(c.url));
          let problem = page ? pageProblem(res) : undefined;
          if (!page && res.statusCode >= 200 && res.statusCode < 400) {
            accepted++; // a generated value that is valid input (a search for '..'): it may change what it asks to
          } else if (!page) {
            problem = sentenceProblem(res);
            // Counting refused attempts is what a rate limit is; nothing else may change.
            const unexpected = changed.filter((table) => table !== 'rate_limits');
            if (!problem && unexpected.length > 0) problem = `refused, yet changed ${unexpected.join(', ')}`;
          } else if (changed.length > 0) {
            problem = `a page changed ${changed.join(', ')}`;
          }
          if (problem)
            failures.push(
              `${c.kind}: ${describeCase(c)} -> ${problem} (${res.statusCode} ${res.body.slice(0, 80)})`,
            );
        }
        report.push({
          database: kind,
          route: key,
          cases: cases.length,
          accepted,
          serverErrors,
          kinds: new Set(cases.map((c) => c.kind)),
        });

        expect(
          failures.slice(0, 5),
          `FUZZ_SEED=${SEED}: ${failures.length} of ${cases.length} cases`,
        ).toEqual([]);
        // Refused requests changed nothing, table by table, over the whole run (accepted ones aside).
        if (accepted === 0) {
          const changed = changedTables(before, await snapshotDatabase(suite.t.database.db));
          expect(
            Object.keys(changed).filter((table) => table !== 'rate_limits'),
            `FUZZ_SEED=${SEED}`,
          ).toEqual([]);
        }
      },
    );

    it.each(Object.keys(ROUTE_ACCESS))(
      '%s answers a request that names no host (HTTP/1.0) without a 5xx',
      async (key) => {
        const [method, pattern] = key.split(' ') as [string, string];
        if (!suite.t.routes.some((r) => r.method === method && r.url === pattern)) return;
        const entry = ROUTE_ACCESS[key]!;
        if (entry.stream) return;
        const example = exampleRequest(method, entry, await suite.fixtures());
        const body = example.payload === undefined ? undefined : Buffer.from(JSON.stringify(example.payload));
        const headers: Record<string, string> = {
          ...(example.headers as Record<string, string>),
          ...identityHeaders(suite, entry),
          ...(body ? { 'content-type': 'application/json', 'content-length': String(body.length) } : {}),
        };
        const head = Object.entries(headers)
          .map(([name, value]) => `${name}: ${value}\r\n`)
          .join('');
        const before = await snapshotDatabase(suite.t.database.db);
        const { socket, answer } = await openRaw(port);
        socket.write(
          Buffer.concat([
            Buffer.from(`${method} ${String(example.url)} HTTP/1.0\r\n${head}\r\n`),
            body ?? Buffer.alloc(0),
          ]),
        );
        const res = parseRawAnswer(await answer);
        expect(res.status, res.body).toBeLessThan(500);
        // A route that makes a link from the request's host refuses before it changes anything.
        if (res.body === 'Send a Host header naming this site.') {
          expect(res.status).toBe(400);
          const changed = changedTables(before, await snapshotDatabase(suite.t.database.db));
          expect(Object.keys(changed).filter((table) => table !== 'rate_limits')).toEqual([]);
        }
      },
    );

    /**
     * Sends the head of `key`'s example request over a new connection, announcing the whole length
     * of its body (the example's JSON, padded with spaces to `padTo` bytes), and no byte of it.
     */
    async function openExampleRequest(key: string, fixtures: Fixtures, padTo = 0) {
      const [method, pattern] = key.split(' ') as [string, string];
      const entry = ROUTE_ACCESS[key]!;
      const example = exampleRequest(method, entry, fixtures);
      const headers: Record<string, string> = {
        host: '127.0.0.1',
        ...(example.headers as Record<string, string>),
        ...identityHeaders(suite, entry),
        'content-type': pattern.endsWith('/ipa') ? 'application/octet-stream' : 'application/json',
      };
      const body = Buffer.from(JSON.stringify(example.payload ?? { padding: 'x'.repeat(64) }).padEnd(padTo));
      const head = Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      const { socket, answer } = await openRaw(port);
      socket.write(
        `${method} ${String(example.url)} HTTP/1.1\r\n${head}content-length: ${body.length}\r\n\r\n`,
      );
      return { socket, answer, body };
    }

    /**
     * Waits for the server to close the connection (the client never does), then checks it gave
     * the body up with a 4xx sentence (`sentence` for a 408).
     */
    async function expectGivenUp(answer: Promise<string>, sentence: string) {
      const res = parseRawAnswer(await answer);
      const answered = { statusCode: res.status, headers: res.headers, body: res.body };
      expect(sentenceProblem(answered), `${res.status} ${res.body}`).toBeUndefined();
      // A route that reads its body says why it gave up; one may refuse before reading (a lost lease).
      if (res.status !== 408) expect(res.status, res.body).not.toBe(200);
      else expect(res.body).toBe(sentence);
    }

    const isRegistered = (key: string) => suite.t.routes.some((r) => `${r.method} ${r.url}` === key);
    const bodyRoutes = Object.keys(ROUTE_ACCESS).filter((key) => !/^(GET|HEAD) /.test(key));

    describe('with a body slow to arrive', () => {
      // These wait on the server's body timeouts, each on a connection of its own: they wait side by
      // side, on fixtures made before any of them starts, and the last test checks that none of them
      // changed anything (a test reading the database meanwhile would hold up the others' bytes).
      let shared: Fixtures;
      let before: DatabaseSnapshot;
      beforeAll(async () => {
        shared = await suite.fixtures();
        before = await snapshotDatabase(suite.t.database.db);
      });

      it.concurrent.each(bodyRoutes)(
        '%s answers a body that stops arriving with a 4xx sentence, and closes',
        async (key) => {
          if (!isRegistered(key)) return;
          // The first half of the example's body, of the whole length it announces; then silence.
          const { socket, answer, body } = await openExampleRequest(key, shared);
          socket.write(body.subarray(0, body.length >> 1));
          await expectGivenUp(answer, 'The request body stopped arriving. Send the request again.');
        },
      );

      // Once per route (the dev configuration): the bound is the server's, not the route's billing.
      // Agents' uploads have no overall bound (their idle bound is checked above).
      it.concurrent.each(bodyRoutes.filter((key) => !key.endsWith('/ipa')))(
        '%s answers a body trickled a byte at a time with a 4xx sentence by its overall bound',
        async (key) => {
          if (configuration !== 'dev' || !isRegistered(key)) return;
          const { socket, answer, body } = await openExampleRequest(key, shared, 4096);
          // A byte well within every idle bound, until the server closes: the client never stops first.
          let closed = false;
          void answer.finally(() => (closed = true));
          for (let sent = 0; !closed && sent < body.length; sent++) {
            await new Promise((resolve) => setTimeout(resolve, SUITE_BODY_IDLE_TIMEOUT_MS / 4));
            if (!closed && socket.writable) socket.write(body.subarray(sent, sent + 1));
          }
          await expectGivenUp(answer, 'The request body took too long to arrive. Send the request again.');
        },
      );

      it('changed nothing with any of those bodies', async () => {
        const changed = changedTables(before, await snapshotDatabase(suite.t.database.db));
        expect(Object.keys(changed).filter((table) => table !== 'rate_limits')).toEqual([]);
      });
    });
  });
});

afterAll(() => {
  const width = Math.max(...report.map((r) => r.route.length), 5);
  const column = (value: number | string, size: number) => String(value).padStart(size);
  const lines = report.map(
    (r) =>
      `${r.database.padEnd(8)} ${r.route.padEnd(width)} ${column(r.cases, 6)} ${column(r.accepted, 8)} ${column(r.serverErrors, 4)}  ${[...r.kinds].sort().join(', ')}`,
  );
  const sum = (f: (r: RouteReport) => number) => report.reduce((n, r) => n + f(r), 0);
  console.log(
    [
      `Bad input (FUZZ_SEED=${SEED}): ${report.length} routes, ${sum((r) => r.cases)} cases, ${sum((r) => r.accepted)} valid after all, ${sum((r) => r.serverErrors)} answered 5xx`,
      `${'database'.padEnd(8)} ${'route'.padEnd(width)} ${column('cases', 6)} ${column('accepted', 8)} ${column('5xx', 4)}  kinds`,
      ...lines,
    ].join('\n'),
  );
});

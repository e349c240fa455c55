import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking the iTunes Search and Lookup wire format (GET /search?term&country&entity&limit,
 * GET /lookup?id|bundleId&country): the `{"resultCount": n, "results": [...]}` envelope with Apple's
 * field names, served as `text/javascript` as Apple does. It answers from recorded answers (exact
 * term or id) or else by matching its records, and can be told to fail the ways the store fails.
 * Tests use it; so can an offline demo (`sideport itunes:serve <answer.json ...>`).
 */
export type StoreFault =
  | { kind: 'none' }
  | { kind: 'down' }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'throttle'; retryAfterS?: number }
  | { kind: 'malformed' }
  | { kind: 'hang' }
  /** The connection is dropped before any answer: the store cannot be reached. */
  | { kind: 'reset' };

export interface ItunesServerOptions {
  /** Store records (objects shaped like Apple's results), searched when no recorded answer fits. */
  records?: Array<Record<string, unknown>>;
  /** Recorded answers: `search:<term>` or `lookup:<id>` -> the raw body to send. */
  answers?: Map<string, string>;
  /**
   * Storefronts with a catalogue of their own, by country code (any case): a request whose
   * `country` names one is answered from its records alone (an app it lacks is not found there,
   * and its records carry that store's name, price and link), every other country from `records`.
   * The store's track and version ids are the same in every storefront; its metadata is not.
   */
  storefronts?: Record<string, Array<Record<string, unknown>>>;
  port?: number;
  host?: string;
}

export interface ItunesServer {
  url: string;
  /** Every request received, in order. */
  requests: URL[];
  fault: StoreFault;
  close(): Promise<void>;
}

const envelope = (results: unknown[]) => JSON.stringify({ resultCount: results.length, results }, null, 1);

function matches(record: Record<string, unknown>, term: string) {
  const haystack = ['trackName', 'artistName', 'bundleId', 'sellerName']
    .map((k) => String(record[k] ?? ''))
    .join(' ')
    .toLowerCase();
  return term
    .toLowerCase()
    .split(/\s+/)
    .filter(Boolean)
    .every((word) => haystack.includes(word));
}

/** The records of the storefront a request names (Apple's default storefront is the US). */
function storefrontRecords(options: ItunesServerOptions, url: URL) {
  const country = (url.searchParams.get('country') ?? 'us').toLowerCase();
  const own = Object.entries(options.storefronts ?? {}).find(([code]) => code.toLowerCase() === country);
  return own ? own[1] : (options.records ?? []);
}

function answer(options: ItunesServerOptions, url: URL): { status: number; body: string } {
  const records = storefrontRecords(options, url);
  const limit = Math.min(Number(url.searchParams.get('limit') ?? 50) || 50, 200);
  if (url.pathname === '/search') {
    const term = url.searchParams.get('term') ?? '';
    const recorded = options.answers?.get(`search:${term}`);
    if (recorded !== undefined) return { status: 200, body: recorded };
    return { status: 200, body: envelope(records.filter((r) => matches(r, term)).slice(0, limit)) };
  }
  if (url.pathname === '/lookup') {
    const ids = (url.searchParams.get('id') ?? '').split(',').filter(Boolean);
    const bundleId = url.searchParams.get('bundleId');
    if (ids.some((id) => !/^\d+$/.test(id))) {
      // Apple's answer for a malformed id (recorded in fastlane_itunesLookup-invalid.json).
      return {
        status: 400,
        body: JSON.stringify({ errorMessage: 'Invalid value(s) for key(s): [itunesId]' }),
      };
    }
    const recorded = ids.length === 1 ? options.answers?.get(`lookup:${ids[0]}`) : undefined;
    if (recorded !== undefined) return { status: 200, body: recorded };
    const found = records.filter(
      (r) => ids.includes(String(r.trackId)) || (bundleId !== null && r.bundleId === bundleId),
    );
    return { status: 200, body: envelope(found) };
  }
  return { status: 404, body: '' };
}

export async function startItunesServer(options: ItunesServerOptions = {}): Promise<ItunesServer> {
  const requests: URL[] = [];
  const state: ItunesServer = { url: '', requests, fault: { kind: 'none' }, close: async () => {} };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://itunes.local');
    requests.push(url);
    const fault = state.fault;
    const send = () => {
      if (fault.kind === 'down')
        return void res
          .writeHead(500, { 'content-type': 'text/html' })
          .end('<html>Internal Server Error</html>');
      if (fault.kind === 'throttle') {
        const headers: Record<string, string> = { 'content-type': 'text/html' };
        if (fault.retryAfterS !== undefined) headers['retry-after'] = String(fault.retryAfterS);
        return void res.writeHead(403, headers).end('<html>Forbidden</html>');
      }
      if (fault.kind === 'malformed') {
        return void res
          .writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' })
          .end('{"resultCount": 1, "results": [');
      }
      const { status, body } = answer(options, url);
      res.writeHead(status, { 'content-type': 'text/javascript; charset=utf-8' }).end(body);
    };
    if (fault.kind === 'hang') return;
    if (fault.kind === 'reset') return void req.socket.destroy();
    if (fault.kind === 'slow') setTimeout(send, fault.delayMs);
    else send();
  });
  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
  );
  const { port } = server.address() as AddressInfo;
  state.url = `http://127.0.0.1:${port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}

import {
  createDecipheriv,
  createECDH,
  createHmac,
  createPublicKey,
  randomBytes,
  verify,
  type ECDH,
} from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local push service, written from the RFCs rather than from the sender's code: it accepts a
 * push message (RFC 8030 section 5: POST to the subscription's endpoint, with TTL), checks its
 * VAPID authorization (RFC 8292: `vapid t=<JWT>, k=<public key>`, the JWT ES256-signed by that key,
 * its `aud` this service's origin, its `exp` within 24 hours), decrypts the `aes128gcm` body
 * (RFC 8188 record, keys derived as RFC 8291 section 3.4 says from the browser's private key and
 * auth secret) and keeps what it read. It answers 201, or as told for an endpoint (410 Gone: the
 * browser unsubscribed; 429 or 500 with Retry-After).
 */

/** A browser's side of a subscription: its key pair and auth secret, and the JSON it hands the site. */
export interface BrowserSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
  ecdh: ECDH;
  authSecret: Buffer;
}

export interface ReceivedPush {
  endpoint: string;
  ttl: string | undefined;
  urgency: string | undefined;
  /** The decrypted payload, parsed as JSON. */
  payload: unknown;
  /** The VAPID key (`k`) that signed it, base64url. */
  vapidKey: string;
  jwt: { aud: string; exp: number; sub: string };
}

export interface PushService {
  url: string;
  /** A new browser subscription at this service. */
  subscribe(): BrowserSubscription;
  /** Every push accepted, in order. */
  received: ReceivedPush[];
  /** Requests refused (bad VAPID, undecryptable) with why. */
  refused: string[];
  /** The status an endpoint answers with instead of 201 (and a Retry-After for 429/5xx). */
  answer: Map<string, { status: number; retryAfter?: number }>;
  close(): Promise<void>;
}

const b64u = (buf: Buffer) => buf.toString('base64url');

function hmac(key: Buffer, data: Buffer) {
  return createHmac('sha256', key).update(data).digest();
}

/** HKDF-Expand (RFC 5869) for output of at most one hash length, as RFC 8291 uses it. */
function expand(prk: Buffer, info: Buffer, length: number) {
  return hmac(prk, Buffer.concat([info, Buffer.from([1])])).subarray(0, length);
}

/** RFC 8291 section 3.4 and RFC 8188 section 2: the body's plaintext, for one record. */
function decrypt(body: Buffer, sub: BrowserSubscription): Buffer {
  const salt = body.subarray(0, 16);
  const recordSize = body.readUInt32BE(16);
  const idLength = body[20]!;
  const asPublic = body.subarray(21, 21 + idLength);
  const ciphertext = body.subarray(21 + idLength);
  if (ciphertext.length > recordSize) throw new Error('more than one record');
  const uaPublic = sub.ecdh.getPublicKey();
  const ecdhSecret = sub.ecdh.computeSecret(asPublic);
  const prkKey = hmac(sub.authSecret, ecdhSecret);
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, asPublic]);
  const ikm = expand(prkKey, keyInfo, 32);
  const prk = hmac(salt, ikm);
  const cek = expand(prk, Buffer.from('Content-Encoding: aes128gcm\0'), 16);
  const nonce = expand(prk, Buffer.from('Content-Encoding: nonce\0'), 12);
  const decipher = createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
  const padded = Buffer.concat([
    decipher.update(ciphertext.subarray(0, ciphertext.length - 16)),
    decipher.final(),
  ]);
  // The last record ends with the delimiter 0x02, then zero or more 0x00 of padding.
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error('no last-record delimiter');
  return padded.subarray(0, end);
}

/** RFC 8292: the JWT's ES256 signature by the `k` key, its audience and expiry. */
function checkVapid(header: string | undefined, origin: string) {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header ?? '');
  if (!match) throw new Error(`authorization is not vapid: ${header}`);
  const [, token, k] = match as unknown as [string, string, string];
  const [head, claims, signature] = token.split('.');
  if (!head || !claims || !signature) throw new Error('malformed JWT');
  const raw = Buffer.from(k, 'base64url');
  const key = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: b64u(raw.subarray(1, 33)), y: b64u(raw.subarray(33, 65)) },
    format: 'jwk',
  });
  const isSigned = verify(
    'sha256',
    Buffer.from(`${head}.${claims}`),
    { key, dsaEncoding: 'ieee-p1363' },
    Buffer.from(signature, 'base64url'),
  );
  if (!isSigned) throw new Error('the JWT signature does not verify');
  const jwt = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as ReceivedPush['jwt'];
  if (jwt.aud !== origin) throw new Error(`aud ${jwt.aud} is not ${origin}`);
  const now = Date.now() / 1000;
  if (!(jwt.exp > now && jwt.exp <= now + 24 * 3600)) throw new Error('exp is not within 24 hours');
  if (!/^(mailto:|https:)/.test(jwt.sub)) throw new Error('sub is not mailto: or https:');
  return { jwt, vapidKey: k };
}

async function readBody(req: IncomingMessage) {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startPushService(): Promise<PushService> {
  const subscriptions = new Map<string, BrowserSubscription>();
  const state = {
    url: '',
    received: [] as ReceivedPush[],
    refused: [] as string[],
    answer: new Map<string, { status: number; retryAfter?: number }>(),
  };
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const endpoint = `${state.url}${req.url ?? ''}`;
      const sub = subscriptions.get(endpoint);
      if (req.method !== 'POST' || !sub) return void res.writeHead(404).end();
      const told = state.answer.get(endpoint);
      if (told) {
        const headers: Record<string, string> = told.retryAfter
          ? { 'retry-after': String(told.retryAfter) }
          : {};
        return void res.writeHead(told.status, headers).end();
      }
      try {
        if (req.headers['ttl'] === undefined) throw new Error('no TTL header');
        if (req.headers['content-encoding'] !== 'aes128gcm')
          throw new Error('content-encoding is not aes128gcm');
        const vapid = checkVapid(req.headers.authorization, state.url);
        const payload = JSON.parse(decrypt(body, sub).toString('utf8')) as unknown;
        state.received.push({
          endpoint,
          ttl: req.headers['ttl'] as string | undefined,
          urgency: req.headers['urgency'] as string | undefined,
          payload,
          ...vapid,
        });
        res.writeHead(201, { location: `${state.url}/messages/${state.received.length}` }).end();
      } catch (err) {
        state.refused.push((err as Error).message);
        res.writeHead(400).end((err as Error).message);
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    get url() {
      return state.url;
    },
    received: state.received,
    refused: state.refused,
    answer: state.answer,
    subscribe() {
      const ecdh = createECDH('prime256v1');
      ecdh.generateKeys();
      const authSecret = randomBytes(16);
      const endpoint = `${state.url}/push/${randomBytes(12).toString('hex')}`;
      const sub: BrowserSubscription = {
        endpoint,
        keys: { p256dh: b64u(ecdh.getPublicKey()), auth: b64u(authSecret) },
        ecdh,
        authSecret,
      };
      subscriptions.set(endpoint, sub);
      return sub;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

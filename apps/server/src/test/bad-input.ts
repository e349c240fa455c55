import fc from 'fast-check';
import type { z } from 'zod';

/**
 * Bad requests for one route, generated with fast-check from the route's pattern, the fields of
 * its zod schemas and the example request of its route-access line: wrong types, huge and Unicode
 * strings, NUL and control characters, path traversal in every encoding, deep JSON, prototype keys,
 * oversized bodies and numbers past every bound. Nothing here asks the route's own schemas what
 * they accept (a schema that lets too much through is what the run is looking for); a generated
 * value that happens to be valid (a search for '..') is told apart by the answer.
 */

export interface FuzzCase {
  /** Which kind of damage, for the report. */
  kind: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

export interface FuzzRoute {
  method: string;
  /** The route pattern as registered: /api/app/:app_id/:app_ver_id */
  pattern: string;
  schema: { params?: z.ZodType; querystring?: z.ZodType; body?: z.ZodType } | undefined;
  /** A request the route's caller makes successfully: its URL and JSON body. */
  example: { url: string; payload?: unknown };
  bodyLimitBytes: number;
}

const pctByte = (b: number) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`;

/** Raw path segments (as sent on the wire) that no parameter should take. */
const TRAVERSALS = [
  '..',
  '.',
  '..%2F..%2F..%2Fetc%2Fpasswd',
  '%2E%2E%2F%2E%2E%2Fetc%2Fpasswd',
  '%2e%2e%2f',
  '%252E%252E%252F',
  '..%5C..%5Cwindows',
  '%C0%AE%C0%AE%2F',
  '%E0%80%AE%E0%80%AE',
  '..%00',
  '....%2F%2F',
  '%2Fetc%2Fpasswd',
  '..%255c',
  '%uff0e%uff0e',
  // The suites plant secret.txt beside the web root: one folder up, in each spelling.
  '..%2Fsecret.txt',
  '%2E%2E%2Fsecret.txt',
  '%2e%2e/secret.txt',
  '../secret.txt',
  '..%5Csecret.txt',
  '%252E%252E%252Fsecret.txt',
  '..%2F..%2Fweb%2F..%2Fsecret.txt',
];
const WRONG_TYPES = [
  'abc',
  '-1',
  '1.5',
  '1e3',
  '0x1F',
  'NaN',
  'Infinity',
  '-Infinity',
  'true',
  'null',
  '%5B%5D',
  '%7B%7D',
  '+1',
  '%201',
  '1%20',
];
const PAST_BOUNDS = [
  '9007199254740992',
  '9007199254740993',
  '9223372036854775807',
  '9223372036854775808',
  '18446744073709551616',
  `1${'0'.repeat(400)}`,
  '-9223372036854775809',
  '-0',
  '00000000000000000000001',
  '100001',
  '4294967296',
  '2147483648',
];
const CONTROL = [
  ...Array.from({ length: 32 }, (_, i) => pctByte(i)),
  '%7F',
  '%C2%80',
  '%C2%9F',
  '%E2%80%8B',
  '%EF%BB%BF',
];

/** One value of each class, sent in every run for every parameter. */
const CANONICAL_SEGMENTS = [
  '%00',
  '%1F',
  '%7F',
  '9223372036854775808',
  '9007199254740992',
  'abc',
  '-1',
  '1e3',
  '..%2F..%2Fetc%2Fpasswd',
  '%C0%AE%C0%AE%2F',
  '%F0%9F%8E%B8',
  'a'.repeat(600),
];
/** One JSON value of each class, sent in every run for every body field. */
const CANONICAL_JSON_VALUES = [
  'null',
  '12345678',
  '[]',
  '{}',
  '"\\u0000"',
  '1e400',
  JSON.stringify('x'.repeat(10_000)),
  `${'['.repeat(3000)}${']'.repeat(3000)}`,
];

/** A raw segment: percent-escapes of arbitrary bytes (often not UTF-8 at all). */
const rawBytes = fc
  .uint8Array({ minLength: 1, maxLength: 24 })
  .map((bytes) => [...bytes].map(pctByte).join(''));
/** Text of any script and plane, emoji and combining marks, escaped as a browser would. */
const unicodeText = fc
  .string({ unit: 'grapheme', minLength: 1, maxLength: 40 })
  .map((s) => encodeURIComponent(s));
const huge = fc
  .integer({ min: 101, max: 6000 })
  .chain((n) => fc.constantFrom('a', '9', '%00', '%C3%A9', '..%2F').map((u) => u.repeat(n)));

export const badSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...TRAVERSALS),
  fc.constantFrom(...WRONG_TYPES),
  fc.constantFrom(...PAST_BOUNDS),
  fc.constantFrom(...CONTROL),
  rawBytes,
  unicodeText,
  huge,
  // A plausible value spoiled by one bad character before or after it.
  fc
    .tuple(fc.constantFrom('1', '0', 'kr', 'abc'), fc.constantFrom(...CONTROL, '%2F..', '%25', '%zz'))
    .map(([v, bad]) => v + bad),
  fc
    .tuple(fc.constantFrom(...CONTROL, '..%2F'), fc.constantFrom('1', 'kr', 'abc'))
    .map(([bad, v]) => bad + v),
);

/** JSON texts of values no field should take. */
const badJsonValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('null', 'true', 'false', '0', '-1', '1.5', '[]', '{}', '[null]', '{"a":1}', '""'),
  fc.constantFrom(
    '1e400',
    '-1e400',
    '9223372036854775808',
    '18446744073709551616',
    '-0',
    '1e-400',
    '123456789012345678901234567890',
  ),
  fc.string({ unit: 'grapheme', maxLength: 60 }).map((s) => JSON.stringify(s)),
  fc.constantFrom(
    '"\\u0000"',
    '"abcd\\u0000"',
    '"\\ud800"',
    '"\\udfff\\ud800"',
    '"\\u202e\\u0000"',
    '"..\\/..\\/etc\\/passwd"',
    '"\\u0007\\u001b[31m"',
  ),
  fc.integer({ min: 33, max: 20_000 }).map((n) => JSON.stringify('x'.repeat(n))),
  fc.integer({ min: 2, max: 5000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
  fc.integer({ min: 2, max: 3000 }).map((depth) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`),
);

const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'];

const patternSegments = (pattern: string) => pattern.split('/').slice(1);

const isDecodable = (path: string) => {
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
};

const hasBody = (method: string) => ['POST', 'PUT', 'PATCH', 'DELETE'].includes(method);

/**
 * Every kind of bad request that applies to a route, as one arbitrary, and the canonical cases of
 * each class for each parameter and field, which every run sends whatever the sample holds.
 */
export function badRequests(route: FuzzRoute): { arbitrary: fc.Arbitrary<FuzzCase>; canonical: FuzzCase[] } {
  const [examplePath, exampleQuery] = route.example.url.split(/\?(.*)/s, 2) as [string, string | undefined];
  const json = { 'content-type': 'application/json' };
  const examplePayload =
    route.example.payload === undefined ? undefined : JSON.stringify(route.example.payload);
  const base = (kind: string, url: string, extra: Partial<FuzzCase> = {}): FuzzCase => ({
    kind,
    method: route.method,
    url,
    headers: examplePayload === undefined ? {} : { ...json },
    ...(examplePayload === undefined ? {} : { payload: examplePayload }),
    ...extra,
  });
  const withQuery = (path: string) => (exampleQuery === undefined ? path : `${path}?${exampleQuery}`);
  const kinds: Array<fc.Arbitrary<FuzzCase | undefined>> = [];
  const canonical: Array<FuzzCase | undefined> = [];

  // A path parameter replaced.
  const paramSlots = patternSegments(route.pattern)
    .map((name, index) => ({ name, index }))
    .filter(({ name }) => name.startsWith(':') || name === '*');
  const withParam = (slot: { name: string; index: number }, bad: string) => {
    const segments = examplePath.split('/').slice(1);
    if (segments[slot.index] === bad) return undefined;
    segments[slot.index] = bad;
    if (slot.name === '*') segments.length = slot.index + 1;
    return base(`param ${slot.name}`, withQuery(`/${segments.join('/')}`));
  };
  if (paramSlots.length > 0) {
    kinds.push(
      fc.tuple(fc.constantFrom(...paramSlots), badSegment).map(([slot, bad]) => withParam(slot, bad)),
    );
    for (const slot of paramSlots) canonical.push(...CANONICAL_SEGMENTS.map((bad) => withParam(slot, bad)));
  }

  // Garbage after the route's path, or a malformed escape inside it.
  kinds.push(
    badSegment.map((bad) => base('path', withQuery(`${examplePath.replace(/\/$/, '')}/${bad}`))),
    fc
      .tuple(
        fc.nat({ max: examplePath.length - 1 }),
        fc.constantFrom('%%', '%z', '%zz', '%G1', '%E0%A4%Z', '%C0%AF', '%ED%A0%80', '%FF'),
      )
      .map(([at, bad]) => {
        const path = examplePath.slice(0, at + 1) + bad + examplePath.slice(at + 1);
        return isDecodable(path) ? undefined : base('malformed escape', withQuery(path));
      }),
  );

  // A declared query value replaced, or given twice.
  const queryShape = (route.schema?.querystring as { shape?: Record<string, unknown> } | undefined)?.shape;
  const withQueryValue = (key: string, bad: string, twice: boolean) =>
    base(`query ${key}`, `${examplePath}?${twice ? `${key}=${bad}&${key}=1` : `${key}=${bad}`}`);
  if (queryShape && Object.keys(queryShape).length > 0) {
    const keys = Object.keys(queryShape);
    kinds.push(
      fc
        .tuple(fc.constantFrom(...keys), badSegment, fc.boolean())
        .map(([key, bad, twice]) => withQueryValue(key, bad, twice)),
    );
    for (const key of keys)
      canonical.push(
        ...CANONICAL_SEGMENTS.map((bad) => withQueryValue(key, bad, false)),
        withQueryValue(key, '1', true),
      );
  }

  if (hasBody(route.method)) {
    // Bodies no route takes: not JSON, empty, poisoned prototypes, past the size limit.
    const poisoned = fc
      .tuple(
        fc.constantFrom(...PROTO_KEYS),
        fc.constantFrom('{"grade":1}', '{"prototype":{"grade":1}}', '{"isAdmin":true}'),
      )
      .map(([key, value]) => {
        const rest = examplePayload && examplePayload !== '{}' ? `,${examplePayload.slice(1)}` : '}';
        return `{"${key}":${value}${rest}`;
      })
      // Only __proto__ and constructor.prototype poison; others are plain unknown keys.
      .filter((body) => /"__proto__"|"constructor":\{"prototype"/.test(body));
    kinds.push(
      fc
        .oneof(
          fc.constantFrom(
            '',
            '{',
            '{"id":',
            '[1,2',
            'null x',
            '\u0000',
            '{"a":1}}',
            "{'id':'x'}",
            '{"id":"a"\u0000}',
          ),
          fc.string({ maxLength: 80 }).filter((s) => {
            try {
              JSON.parse(s);
              return false;
            } catch {
              return true;
            }
          }),
          poisoned,
          fc.integer({ min: 1, max: 3 }).map((n) => `{"pad":"${'x'.repeat(route.bodyLimitBytes * n)}"}`),
        )
        .map((payload) => base('body', route.example.url, { headers: { ...json }, payload })),
    );
  }

  if (route.schema?.body && route.example.payload !== null && typeof route.example.payload === 'object') {
    const example = route.example.payload as Record<string, unknown>;
    const fields = [...Object.keys(example), 'extra'];
    const withField = (field: string, valueJson: string, drop: boolean) => {
      const parts = Object.entries(example)
        .filter(([k]) => k !== field)
        .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
      if (!drop || field === 'extra') parts.push(`${JSON.stringify(field)}:${valueJson}`);
      return base(`body ${field}`, route.example.url, {
        headers: { ...json },
        payload: `{${parts.join(',')}}`,
      });
    };
    for (const field of Object.keys(example)) {
      canonical.push(
        withField(field, '', true),
        ...CANONICAL_JSON_VALUES.map((value) => withField(field, value, false)),
      );
    }
    kinds.push(
      fc
        .tuple(fc.constantFrom(...fields), badJsonValue, fc.boolean())
        .map(([field, valueJson, drop]) => withField(field, valueJson, drop)),
      // The right fields in a body the route does not read.
      fc
        .constantFrom(
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/xml',
        )
        .map((type) =>
          base('content type', route.example.url, {
            headers: { 'content-type': type },
            payload: examplePayload ?? '{}',
          }),
        ),
      fc
        .constantFrom('[]', '"text"', '42', 'null', '[{"id":"abcd"}]')
        .map((payload) => base('body type', route.example.url, { headers: { ...json }, payload })),
    );
  }

  return {
    arbitrary: fc.oneof(...kinds).filter((c): c is FuzzCase => c !== undefined),
    canonical: canonical.filter((c): c is FuzzCase => c !== undefined),
  };
}

/**
 * The test double itself: it must refuse what Apple's OpenAPI document does not allow, or the
 * client tests that rely on it prove nothing.
 */
import { generateKeyPairSync } from 'node:crypto';
import { importPKCS8, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAscServer, type AscServer } from './asc-server.js';

const keyPem = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
const keyId = 'KEY1234567';
const issuerId = '69a6de70-0000-47e3-e053-5b8c7c11a4d1';
let server: AscServer;

async function token(claims: { aud?: string; lifetime?: number; kid?: string } = {}) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: claims.kid ?? keyId, typ: 'JWT' })
    .setIssuer(issuerId)
    .setAudience(claims.aud ?? 'appstoreconnect-v1')
    .setIssuedAt(now)
    .setExpirationTime(now + (claims.lifetime ?? 600))
    .sign(await importPKCS8(keyPem, 'ES256'));
}

async function ask(method: string, path: string, body?: unknown, bearer?: string) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${bearer ?? (await token())}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: res.status,
    json: (await res.json()) as { errors?: { status: string; code: string; detail: string }[] },
  };
}

beforeAll(async () => {
  server = await startAscServer({ keyId, issuerId, keyPem });
});
afterAll(async () => server.close());

describe('the App Store Connect test server', () => {
  it('answers a request the document allows, and records no violation', async () => {
    const { status, json } = await ask('GET', '/v1/devices?filter[platform]=IOS,MAC_OS&limit=200');
    expect(status).toBe(200);
    expect(json).toMatchObject({
      data: [],
      links: { self: expect.any(String) },
      meta: { paging: { total: 0, limit: 200 } },
    });
    expect(server.violations).toEqual([]);
  });

  it('refuses and records a path the document does not have', async () => {
    const { status, json } = await ask('GET', '/v1/gadgets');
    expect(status).toBe(404);
    expect(json.errors![0]).toMatchObject({ status: '404', code: 'NOT_FOUND' });
    expect(server.violations.pop()).toMatch(/GET \/v1\/gadgets/);
  });

  it('refuses and records a method the path does not have', async () => {
    expect((await ask('DELETE', '/v1/devices/ABC')).status).toBe(404);
    expect(server.violations.pop()).toMatch(/DELETE \/v1\/devices\/ABC/);
  });

  it('refuses and records a query parameter the operation does not take, or a value it does not allow', async () => {
    expect((await ask('GET', '/v1/devices?filter[colour]=red')).status).toBe(400);
    expect(server.violations.pop()).toBe(
      "client: The parameter 'filter[colour]' can not be used with this request",
    );
    expect((await ask('GET', '/v1/devices?filter[platform]=ANDROID')).status).toBe(400);
    expect(server.violations.pop()).toMatch(/filter\[platform\]' has an invalid value 'ANDROID'/);
    expect((await ask('GET', '/v1/devices?limit=500')).status).toBe(400);
    expect(server.violations.pop()).toMatch(/'limit' has an invalid value '500'.*must be <= 200/);
  });

  it('refuses and records a body that does not match the request schema', async () => {
    const { status } = await ask('POST', '/v1/devices', {
      data: { type: 'devices', attributes: { name: 'x', platform: 'IOS' } },
    });
    expect(status).toBe(422);
    expect(server.violations.pop()).toMatch(
      /DeviceCreateRequest|devices_createInstance.*must have required property 'udid'/,
    );
    await ask('POST', '/v1/devices', {
      data: {
        type: 'devices',
        attributes: { name: 'x', udid: '00008120-001A2B3C4D5E6F70', platform: 'ANDROID' },
      },
    });
    expect(server.violations.pop()).toMatch(/must be equal to one of the allowed values/);
    expect(server.devices).toEqual([]);
  });

  it('refuses tokens Apple would: wrong audience, wrong kid, too long a life, none at all', async () => {
    for (const [bearer, reason] of [
      [await token({ aud: 'someone-else' }), 'unexpected "aud" claim value'],
      [await token({ kid: 'OTHERKEY00' }), "kid OTHERKEY00 is not the key's id"],
      [await token({ lifetime: 3600 }), 'the token lives 3600 s, more than 20 minutes'],
      ['not.a.jwt', 'Invalid Token or Protected Header formatting'],
    ] as const) {
      const { status, json } = await ask('GET', '/v1/devices', undefined, bearer);
      expect(status).toBe(401);
      expect(json.errors![0]).toMatchObject({ code: 'NOT_AUTHORIZED' });
      expect(server.authFailures.pop()).toBe(reason);
    }
    expect(server.violations).toEqual([]);
  });
});

describe('bundle ids and their capabilities', () => {
  const create = (identifier: string) =>
    ask('POST', '/v1/bundleIds', {
      data: { type: 'bundleIds', attributes: { identifier, name: 'Copy', platform: 'IOS' } },
    });
  const enable = (id: string, capabilityType: string) =>
    ask('POST', '/v1/bundleIdCapabilities', {
      data: {
        type: 'bundleIdCapabilities',
        attributes: { capabilityType },
        relationships: { bundleId: { data: { type: 'bundleIds', id } } },
      },
    });

  it("gives a new explicit App ID Apple's defaults, enables a capability once, and answers 409 after", async () => {
    const made = await create('com.example.copy.dup1');
    expect(made.status).toBe(201);
    const id = (made.json as unknown as { data: { id: string } }).data.id;
    const listed = await ask('GET', `/v1/bundleIds/${id}/bundleIdCapabilities`);
    expect(listed.status).toBe(200);
    const types = (json: unknown) =>
      (json as { data: { id: string; attributes: { capabilityType: string } }[] }).data.map(
        (c) => c.attributes.capabilityType,
      );
    expect(types(listed.json)).toEqual(['GAME_CENTER', 'IN_APP_PURCHASE']);
    const push = await enable(id, 'PUSH_NOTIFICATIONS');
    expect(push.status).toBe(201);
    expect((push.json as unknown as { data: { id: string } }).data.id).toBe(`${id}_PUSH_NOTIFICATIONS`);
    const again = await enable(id, 'PUSH_NOTIFICATIONS');
    expect(again.status).toBe(409);
    expect(again.json.errors![0]!.code).toBe('ENTITY_ERROR.ATTRIBUTE.INVALID.DUPLICATE');
    expect(types((await ask('GET', `/v1/bundleIds/${id}/bundleIdCapabilities`)).json)).toContain(
      'PUSH_NOTIFICATIONS',
    );
    expect(server.violations).toEqual([]);
  });

  it('answers 409 for an identifier already taken, and for push on a wildcard App ID', async () => {
    expect((await create('com.example.copy.dup2')).status).toBe(201);
    const taken = await create('com.example.copy.dup2');
    expect(taken.status).toBe(409);
    expect(taken.json.errors![0]!.detail).toBe(
      "An App ID with Identifier 'com.example.copy.dup2' is not available. Please enter a different string.",
    );
    const wildcard = await create('com.example.*');
    const id = (wildcard.json as unknown as { data: { id: string } }).data.id;
    expect((await ask('GET', `/v1/bundleIds/${id}/bundleIdCapabilities`)).json).toMatchObject({ data: [] });
    expect((await enable(id, 'PUSH_NOTIFICATIONS')).status).toBe(409);
    expect((await enable('NOSUCHID', 'PUSH_NOTIFICATIONS')).status).toBe(409);
    expect(server.violations).toEqual([]);
  });

  it('refuses a capability type the document does not list', async () => {
    const made = await create('com.example.copy.dup3');
    const id = (made.json as unknown as { data: { id: string } }).data.id;
    expect((await enable(id, 'TELEPATHY')).status).toBe(422);
    expect(server.violations.pop()).toMatch(/bundleIdCapabilities_createInstance's schema/);
  });
});

describe('several accounts on one server', () => {
  const second = {
    keyId: 'KEY2222222',
    issuerId: '69a6de70-2222-47e3-e053-5b8c7c11a4d1',
    keyPem: generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString(),
  };
  let pool: AscServer;
  beforeAll(async () => {
    pool = await startAscServer({
      keyId,
      issuerId,
      keyPem,
      deviceLimit: 1,
      accounts: [{ ...second, teamId: 'SPTEST2222', deviceLimit: 2 }],
    });
  });
  afterAll(async () => pool.close());

  const as = async (
    key: { keyId: string; issuerId: string; keyPem: string },
    method: string,
    path: string,
    body?: unknown,
  ) => {
    const now = Math.floor(Date.now() / 1000);
    const bearer = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: key.keyId, typ: 'JWT' })
      .setIssuer(key.issuerId)
      .setAudience('appstoreconnect-v1')
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(await importPKCS8(key.keyPem, 'ES256'));
    const res = await fetch(`${pool.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return {
      status: res.status,
      json: (await res.json()) as { data?: unknown[]; errors?: { detail: string }[] },
    };
  };
  const register = (key: typeof second, udid: string) =>
    as(key, 'POST', '/v1/devices', {
      data: { type: 'devices', attributes: { name: 'd', udid, platform: 'IOS' } },
    });
  const first = { keyId, issuerId, keyPem };

  it('keeps each key’s devices on its own account, each with its own limit per family', async () => {
    pool.setDeviceClass('00008120-0000000000000A01', 'IPAD');
    expect((await register(first, '00008120-0000000000000001')).status).toBe(201);
    expect((await register(first, '00008120-0000000000000A01')).status).toBe(201);
    const full = await register(first, '00008120-0000000000000002');
    expect(full.status).toBe(403);
    expect(full.json.errors![0]!.detail).toBe(
      'Your development team has reached the maximum number of registered iPhone devices.',
    );
    // The same UDID is another account's to register too.
    expect((await register(second, '00008120-0000000000000001')).status).toBe(201);
    expect((await register(second, '00008120-0000000000000002')).status).toBe(201);
    expect((await as(second, 'GET', '/v1/devices')).json.data).toHaveLength(2);
    expect(pool.devices.map((d) => [d.udid, d.deviceClass])).toEqual([
      ['00008120-0000000000000001', 'IPHONE'],
      ['00008120-0000000000000A01', 'IPAD'],
    ]);
    expect(pool.account(second.keyId).teamId).toBe('SPTEST2222');
    expect(pool.violations).toEqual([]);
  });

  it('refuses every token of an account whose key was revoked, and only its', async () => {
    pool.account(second.keyId).revokeKey();
    const refused = await as(second, 'GET', '/v1/devices');
    expect(refused.status).toBe(401);
    expect(pool.authFailures.pop()).toBe('the key is revoked');
    expect((await as(first, 'GET', '/v1/devices')).status).toBe(200);
    expect(pool.violations).toEqual([]);
  });
});

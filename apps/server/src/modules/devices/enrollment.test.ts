import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { buildXmlPlist, parsePlistDict } from '@sideport/ipa';
import { beforeAll, describe, expect, it } from 'vitest';
import { fixturesDir } from '../../test/fixtures.js';
import { verifyCms } from '../../test/cms-verify.js';
import {
  APPLE_DOCTYPE,
  ATTRIBUTES,
  billionLaughs,
  devicePlist,
  issue,
  p12Of,
  signAnswer,
  type Issued,
} from '../../test/device-answers.js';
import {
  buildEnrollmentProfile,
  DEVICE_ATTRIBUTES,
  loadProfileSigner,
  parseEnrollmentAnswer,
  type EnrollmentRefusal,
} from './enrollment.js';

let deviceCa: Issued;
let deviceCaIntermediate: Issued;
let device: Issued;
let otherCa: Issued;
beforeAll(() => {
  deviceCa = issue('Test Device Root', undefined, true);
  deviceCaIntermediate = issue('Test iPhone Device CA', deviceCa, true);
  device = issue('5D3C9A2B-0000-4000-8000-00000000ABCD', deviceCaIntermediate);
  otherCa = issue('Someone Else CA', undefined, true);
});

async function refusal(
  body: Buffer,
  options?: Parameters<typeof parseEnrollmentAnswer>[1],
): Promise<{ code: EnrollmentRefusal; status: number; message: string }> {
  try {
    await parseEnrollmentAnswer(body, options);
  } catch (err) {
    return err as { code: EnrollmentRefusal; status: number; message: string };
  }
  throw new Error('the answer was accepted');
}

describe('Profile Service .mobileconfig', () => {
  const request = { url: 'https://sideport.example/api/udid/enroll/tok123', challenge: 'tok123' };

  it('asks the device for its attributes, to be posted to the one-time URL', () => {
    const dict = parsePlistDict(buildEnrollmentProfile(request), 'mobileconfig');
    expect(dict).toMatchObject({
      PayloadType: 'Profile Service',
      PayloadVersion: 1,
      PayloadOrganization: 'Sideport',
      PayloadIdentifier: 'app.sideport.enrollment',
      PayloadContent: {
        URL: request.url,
        DeviceAttributes: ['UDID', 'PRODUCT', 'VERSION', 'SERIAL', 'DEVICE_NAME'],
        Challenge: 'tok123',
      },
    });
    expect(DEVICE_ATTRIBUTES).toEqual(['UDID', 'PRODUCT', 'VERSION', 'SERIAL', 'DEVICE_NAME']);
    expect(dict['PayloadUUID']).toMatch(
      /^[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$/,
    );
    expect(typeof dict['PayloadDisplayName']).toBe('string');
    expect(typeof dict['PayloadDescription']).toBe('string');
  });

  it('is signed with the operator’s PKCS#12, content included, and pkijs verifies it', async () => {
    const operatorCa = issue('Operator Root', undefined, true);
    const operator = issue('enroll.sideport.example', operatorCa);
    const p12 = p12Of(operator, 'p12-pass');
    const signed = buildEnrollmentProfile({ ...request, signer: loadProfileSigner(p12, 'p12-pass') });
    expect(signed.subarray(0, 1).toString('hex')).toBe('30'); // DER, not XML

    const content = await verifyCms(signed, operatorCa.pem);
    expect(parsePlistDict(content, 'mobileconfig')).toMatchObject({
      PayloadType: 'Profile Service',
      PayloadContent: { URL: request.url },
    });
  });

  it('says which setting is wrong when the PKCS#12 password is, without the password', () => {
    const operator = issue('enroll.sideport.example');
    const p12 = p12Of(operator, 'right-pass');
    let error: Error & { code?: string } = new Error('none');
    try {
      loadProfileSigner(p12, 'wrong-pass');
    } catch (err) {
      error = err as Error & { code?: string };
    }
    expect(error.code).toBe('PROFILE_SIGNING_P12_INVALID');
    expect(error.message).toMatch(/^PROFILE_SIGNING_P12 could not be used: /);
    expect(error.message).not.toContain('wrong-pass');
  });
});

describe('the device’s answer', () => {
  it('reads a device-signed answer (SHA-1, no signed attributes, as devices sign)', async () => {
    const answer = await parseEnrollmentAnswer(
      signAnswer(devicePlist(), device, { chain: [deviceCaIntermediate] }),
    );
    expect(answer).toEqual({
      udid: ATTRIBUTES.UDID,
      product: 'iPhone15,2',
      version: '21E236',
      serial: 'F2LXK0ABCDEF',
      deviceName: 'Ana’s iPhone',
      challenge: ATTRIBUTES.CHALLENGE,
      signerSubject: 'CN=5D3C9A2B-0000-4000-8000-00000000ABCD',
      chainVerified: false,
    });
  });

  it('reads an answer with signed attributes and Apple’s DOCTYPE', async () => {
    const xml = devicePlist().replace(/<!DOCTYPE[^>]*>/, APPLE_DOCTYPE);
    expect(xml).toContain(APPLE_DOCTYPE);
    const answer = await parseEnrollmentAnswer(signAnswer(xml, device, { attributes: true }));
    expect(answer.udid).toBe(ATTRIBUTES.UDID);
  });

  it('checks the chain to the configured device CA, through the certificates the answer carries', async () => {
    const body = signAnswer(devicePlist(), device, { chain: [deviceCaIntermediate] });
    expect((await parseEnrollmentAnswer(body, { deviceCaPem: deviceCaIntermediate.pem })).chainVerified).toBe(
      true,
    );
    expect((await parseEnrollmentAnswer(body, { deviceCaPem: deviceCa.pem })).chainVerified).toBe(true);
    expect(
      (await parseEnrollmentAnswer(body, { deviceCaPem: `${otherCa.pem}\n${deviceCa.pem}` })).chainVerified,
    ).toBe(true);
    const untrusted = await refusal(body, { deviceCaPem: otherCa.pem });
    expect(untrusted.code).toBe('ENROLLMENT_SIGNER_UNTRUSTED');
    expect(untrusted.message).toContain('CN=5D3C9A2B-0000-4000-8000-00000000ABCD');
    // Without the intermediate in the message, the root alone cannot be reached.
    expect((await refusal(signAnswer(devicePlist(), device), { deviceCaPem: deviceCa.pem })).code).toBe(
      'ENROLLMENT_SIGNER_UNTRUSTED',
    );
  });

  it('refuses a certificate that claims the CA’s name but was not issued by it', async () => {
    const impostorCa = issue('Test iPhone Device CA', undefined, true); // same name, other key
    const impostorDevice = issue('5D3C9A2B-0000-4000-8000-00000000ABCD', impostorCa);
    const body = signAnswer(devicePlist(), impostorDevice, { chain: [impostorCa] });
    expect((await refusal(body, { deviceCaPem: deviceCaIntermediate.pem })).code).toBe(
      'ENROLLMENT_SIGNER_UNTRUSTED',
    );
  });

  describe('the real answer of a device (zentral’s recording, signed by Apple’s device CA)', () => {
    const real = () =>
      readFileSync(
        path.join(fixturesDir, 'enrollment/zentral_ota_payload_phase_2_signed_by_apple_device_ca.p7s'),
      );
    /** Apple's "Apple iPhone Device CA" as the message carries it: what an operator would configure. */
    const appleDeviceCaPem = () => {
      const info = new pkijs.ContentInfo({ schema: asn1js.fromBER(new Uint8Array(real())).result });
      const certs = new pkijs.SignedData({ schema: info.content }).certificates as pkijs.Certificate[];
      const ca = certs.find((c) =>
        c.subject.typesAndValues.some((tv) => tv.value.valueBlock.value === 'Apple iPhone Device CA'),
      )!;
      return `-----BEGIN CERTIFICATE-----\n${Buffer.from(ca.toSchema().toBER()).toString('base64')}\n-----END CERTIFICATE-----\n`;
    };

    it('is read and its signature checked', async () => {
      const answer = await parseEnrollmentAnswer(real());
      expect(answer).toEqual({
        udid: '78897E40-F532-5DE0-A7DC-56BAC5CEEB9C',
        product: 'VirtualMac2,1',
        version: '22A380',
        serial: 'ZDL2M9PTJ3',
        challenge: '8gLEIttrT7qbLOZs3XzL5XPgNXCliGwRLtn2Lfe4GBsa7g6MGm2sJjicKrLFal4D',
        signerSubject: 'CN=0B5938EB-A130-466F-BFA5-BFA950500D03',
        chainVerified: false,
      });
    });

    it('chains to Apple’s device CA when that is configured, and not to another', async () => {
      expect((await parseEnrollmentAnswer(real(), { deviceCaPem: appleDeviceCaPem() })).chainVerified).toBe(
        true,
      );
      expect((await refusal(real(), { deviceCaPem: otherCa.pem })).code).toBe('ENROLLMENT_SIGNER_UNTRUSTED');
    });

    it('is refused with one character of its UDID changed', async () => {
      const body = real();
      const at = body.indexOf('78897E40-F532');
      expect(at).toBeGreaterThan(0);
      body[at] = '9'.charCodeAt(0);
      expect((await refusal(body)).code).toBe('ENROLLMENT_SIGNATURE_INVALID');
    });
  });

  describe('refuses, changing nothing, an answer that is', () => {
    const cases: [string, () => Buffer, EnrollmentRefusal][] = [
      ['a bare XML plist', () => Buffer.from(devicePlist()), 'ENROLLMENT_UNSIGNED'],
      [
        'a bare binary plist',
        () => Buffer.concat([Buffer.from('bplist00'), Buffer.alloc(40)]),
        'ENROLLMENT_UNSIGNED',
      ],
      ['empty', () => Buffer.alloc(0), 'ENROLLMENT_MALFORMED'],
      ['random bytes', () => Buffer.from('9f8e7d6c5b4a39281706f5e4d3c2b1a0', 'hex'), 'ENROLLMENT_MALFORMED'],
      ['truncated', () => signAnswer(devicePlist(), device).subarray(0, 300), 'ENROLLMENT_MALFORMED'],
      [
        'followed by extra bytes',
        () => Buffer.concat([signAnswer(devicePlist(), device), Buffer.from('junk')]),
        'ENROLLMENT_MALFORMED',
      ],
      [
        'plain data, not SignedData',
        () =>
          Buffer.from(
            new pkijs.ContentInfo({
              contentType: '1.2.840.113549.1.7.1',
              content: new asn1js.OctetString({
                valueHex: new Uint8Array(Buffer.from(devicePlist())).buffer,
              }),
            })
              .toSchema()
              .toBER(),
          ),
        'ENROLLMENT_MALFORMED',
      ],
      [
        'a detached signature',
        () => signAnswer(devicePlist(), device, { detached: true }),
        'ENROLLMENT_MALFORMED',
      ],
      ['signed by no one', () => noSigners(devicePlist()), 'ENROLLMENT_UNSIGNED'],
      [
        'without its signer’s certificate',
        () => signAnswer(devicePlist(), device, { withoutCertificate: true }),
        'ENROLLMENT_SIGNER_UNKNOWN',
      ],
      [
        'changed after signing (signed attributes)',
        () =>
          replaceIn(
            signAnswer(devicePlist(), device, { attributes: true }),
            ATTRIBUTES.UDID,
            '00008120-00FFFFFFFFFFFFFF',
          ),
        'ENROLLMENT_TAMPERED',
      ],
      [
        'changed after signing (device style)',
        () => replaceIn(signAnswer(devicePlist(), device), ATTRIBUTES.UDID, '00008120-00FFFFFFFFFFFFFF'),
        'ENROLLMENT_SIGNATURE_INVALID',
      ],
      [
        'signed by another key than its certificate’s',
        () => signAnswer(devicePlist(), device, { key: otherCa.key }),
        'ENROLLMENT_SIGNATURE_INVALID',
      ],
      [
        'signed by another key, with signed attributes',
        () => signAnswer(devicePlist(), device, { key: otherCa.key, attributes: true }),
        'ENROLLMENT_SIGNATURE_INVALID',
      ],
      [
        'an entity-expansion (billion laughs) plist',
        () => signAnswer(billionLaughs(), device),
        'ENROLLMENT_PLIST_UNSAFE',
      ],
      [
        'an external-entity plist',
        () =>
          signAnswer(
            `<?xml version="1.0"?>\n<!DOCTYPE plist SYSTEM "file:///etc/passwd">\n<plist version="1.0"><dict><key>UDID</key><string>x</string></dict></plist>`,
            device,
          ),
        'ENROLLMENT_PLIST_UNSAFE',
      ],
      [
        'a plist with an internal DTD subset',
        () => signAnswer(devicePlist().replace(/<!DOCTYPE[^>]*>/, '<!DOCTYPE plist [ ]>'), device),
        'ENROLLMENT_PLIST_UNSAFE',
      ],
      [
        'not XML',
        () => signAnswer('<plist><dict><key>UDID</key><string>', device),
        'ENROLLMENT_PLIST_INVALID',
      ],
      [
        'a plist that is not a dictionary',
        () => signAnswer(buildXmlPlist(['UDID']), device),
        'ENROLLMENT_PLIST_INVALID',
      ],
      [
        'without a UDID',
        () => signAnswer(devicePlist({ ...ATTRIBUTES, UDID: '' }), device),
        'ENROLLMENT_FIELDS_MISSING',
      ],
      [
        'without the challenge',
        () => signAnswer(devicePlist(omit(ATTRIBUTES, 'CHALLENGE')), device),
        'ENROLLMENT_FIELDS_MISSING',
      ],
      [
        'with a UDID that is no device identifier',
        () => signAnswer(devicePlist({ ...ATTRIBUTES, UDID: '../../etc/passwd' }), device),
        'ENROLLMENT_PLIST_INVALID',
      ],
      [
        'with a field that is not a string',
        () => signAnswer(devicePlist({ ...ATTRIBUTES, PRODUCT: 7 }), device),
        'ENROLLMENT_PLIST_INVALID',
      ],
      [
        'with an overlong field',
        () => signAnswer(devicePlist({ ...ATTRIBUTES, DEVICE_NAME: 'x'.repeat(300) }), device),
        'ENROLLMENT_PLIST_INVALID',
      ],
    ];
    for (const [what, body, code] of cases) {
      it(what, async () => {
        const err = await refusal(body());
        expect(err.code).toBe(code);
        expect(err.status).toBe(400);
        expect(err.message).toMatch(/^The device answer.*\.$/);
      });
    }

    it('over the size cap, before reading it', async () => {
      const err = await refusal(signAnswer(devicePlist(), device), { maxBytes: 1000 });
      expect(err).toMatchObject({ code: 'ENROLLMENT_TOO_LARGE', status: 413 });
      expect((await refusal(Buffer.alloc(64 * 1024 + 1, 0x30))).code).toBe('ENROLLMENT_TOO_LARGE');
    });
  });
});

function replaceIn(body: Buffer, from: string, to: string): Buffer {
  expect(to.length).toBe(from.length);
  const at = body.indexOf(from);
  expect(at).toBeGreaterThan(0);
  const copy = Buffer.from(body);
  copy.write(to, at, 'latin1');
  return copy;
}

function noSigners(content: string): Buffer {
  const signed = new pkijs.SignedData({
    version: 1,
    encapContentInfo: new pkijs.EncapsulatedContentInfo({
      eContentType: '1.2.840.113549.1.7.1',
      eContent: new asn1js.OctetString({ valueHex: new Uint8Array(Buffer.from(content)).buffer }),
    }),
    signerInfos: [],
  });
  return Buffer.from(
    new pkijs.ContentInfo({ contentType: '1.2.840.113549.1.7.2', content: signed.toSchema(true) })
      .toSchema()
      .toBER(),
  );
}

function omit<T extends object, K extends keyof T>(value: T, key: K): Omit<T, K> {
  const { [key]: _, ...rest } = value;
  return rest;
}

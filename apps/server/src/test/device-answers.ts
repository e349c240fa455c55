/**
 * Device-style enrollment answers for tests: the simulated device's certificates and CMS
 * signatures (modules/devices/simulated-device.ts), an iPhone's attributes, and hostile plists.
 */
import forge from 'node-forge';
import { buildXmlPlist, type PlistObject } from '@sideport/ipa';
import type { Issued } from '../modules/devices/simulated-device.js';

export {
  issueCertificate as issue,
  signDeviceAnswer as signAnswer,
  type Issued,
} from '../modules/devices/simulated-device.js';

/** A PKCS#12 of an issued certificate and its key (3DES, as openssl and Keychain export). */
export function p12Of(identity: Issued, password: string): Buffer {
  const asn1 = forge.pkcs12.toPkcs12Asn1(identity.key, [identity.cert], password, { algorithm: '3des' });
  return Buffer.from(forge.asn1.toDer(asn1).getBytes(), 'binary');
}

export const APPLE_DOCTYPE =
  '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">';

/** What an iPhone answers the Profile Service with (CHALLENGE is the profile's). */
export const ATTRIBUTES = {
  CHALLENGE: 'one-time-token-0123456789',
  DEVICE_NAME: 'Ana’s iPhone',
  PRODUCT: 'iPhone15,2',
  SERIAL: 'F2LXK0ABCDEF',
  UDID: '00008120-001A2B3C4D5E6F70',
  VERSION: '21E236',
};

export const devicePlist = (fields: PlistObject = ATTRIBUTES) => buildXmlPlist(fields);

/** The "billion laughs" entity expansion, in a plist whose UDID expands to 10^9 'lol's. */
export function billionLaughs(): string {
  const entities = [
    '<!ENTITY lol "lol">',
    ...Array.from(
      { length: 9 },
      (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i === 0 ? '' : i};`.repeat(10)}">`,
    ),
  ];
  return `<?xml version="1.0"?>\n<!DOCTYPE plist [\n${entities.join('\n')}\n]>\n<plist version="1.0"><dict><key>UDID</key><string>&lol9;</string></dict></plist>`;
}

/**
 * The capabilities an app's entitlements claim, by entitlement key, with what a person notices when
 * one is lost and what an operator could do about it. The App Store Connect capability types are
 * those of Apple's OpenAPI document (fixtures/appstoreconnect/asc_openapi_3.7.0.json,
 * `CapabilityType`), which has no resource that creates app group, iCloud container or merchant
 * identifiers: those are made on Apple's developer website.
 */

export interface Capability {
  /** Stable id, for clients and tests ('push', 'app-groups'). */
  readonly id: string;
  /** As a person reads it, capitalised ('Push notifications'). */
  readonly name: string;
  /** The entitlement keys that make it up. */
  readonly keys: readonly string[];
  /** What the person notices once it is lost; `who` is the component ('The share extension'). */
  lost(who: string): string;
  /** Apple grants it only to an explicit App ID: no wildcard profile carries it. */
  readonly explicitOnly: boolean;
  /** The App Store Connect capability that enables it on an explicit App ID. */
  readonly ascCapability?: string;
  /** What App Store Connect's API cannot make for it, when something is needed besides the capability. */
  readonly ascCannotCreate?: string;
  /**
   * What an ad-hoc profile of an explicit App ID with `ascCapability` enabled grants for it (the
   * profile's Entitlements), for a team; absent when the capability alone grants nothing usable.
   */
  readonly granted?: (team: string) => Record<string, PlistValue>;
}

import type { PlistValue } from '../plist.js';

const cap = (c: Capability): Capability => c;

export const CAPABILITIES: readonly Capability[] = [
  cap({
    id: 'push',
    name: 'Push notifications',
    keys: ['aps-environment'],
    lost: () => 'Push notifications will not arrive.',
    explicitOnly: true,
    ascCapability: 'PUSH_NOTIFICATIONS',
    granted: () => ({ 'aps-environment': 'production' }),
  }),
  cap({
    id: 'app-groups',
    name: 'App groups',
    keys: ['com.apple.security.application-groups'],
    lost: (who) =>
      who === 'The app'
        ? "The app cannot share its data with its extensions and widgets: app groups are not granted by this server's profiles."
        : `${who} cannot reach the app's data: app groups are not granted by this server's profiles.`,
    explicitOnly: true,
    ascCapability: 'APP_GROUPS',
    ascCannotCreate: 'app group identifiers (group.…)',
  }),
  cap({
    id: 'icloud',
    name: 'iCloud',
    keys: [
      'com.apple.developer.icloud-container-identifiers',
      'com.apple.developer.icloud-services',
      'com.apple.developer.icloud-container-environment',
      'com.apple.developer.icloud-container-development-container-identifiers',
      'com.apple.developer.ubiquity-container-identifiers',
      'com.apple.developer.ubiquity-kvstore-identifier',
    ],
    lost: () => 'iCloud sync will not work: what the app keeps in iCloud does not reach this install.',
    explicitOnly: true,
    ascCapability: 'ICLOUD',
    ascCannotCreate: 'iCloud container identifiers (iCloud.…)',
  }),
  cap({
    id: 'associated-domains',
    name: 'Associated domains',
    keys: ['com.apple.developer.associated-domains'],
    lost: () =>
      "Links to the app's website open in Safari instead of the app, and passwords saved for the website are not offered in it.",
    explicitOnly: true,
    ascCapability: 'ASSOCIATED_DOMAINS',
    granted: () => ({ 'com.apple.developer.associated-domains': '*' }),
  }),
  cap({
    id: 'sign-in-with-apple',
    name: 'Sign in with Apple',
    keys: ['com.apple.developer.applesignin'],
    lost: () => 'Sign in with Apple will not work.',
    explicitOnly: true,
    ascCapability: 'APPLE_ID_AUTH',
    granted: () => ({ 'com.apple.developer.applesignin': ['Default'] }),
  }),
  cap({
    id: 'keychain-sharing',
    name: 'Keychain sharing',
    keys: ['keychain-access-groups'],
    lost: (who) => `${who} cannot share saved logins with the app's other parts.`,
    explicitOnly: false,
  }),
  cap({
    id: 'apple-pay',
    name: 'Apple Pay',
    keys: ['com.apple.developer.in-app-payments'],
    lost: () => 'Apple Pay will not work.',
    explicitOnly: true,
    ascCapability: 'APPLE_PAY',
    ascCannotCreate: 'merchant identifiers (merchant.…)',
  }),
  cap({
    id: 'healthkit',
    name: 'HealthKit',
    keys: ['com.apple.developer.healthkit', 'com.apple.developer.healthkit.access'],
    lost: () => 'It cannot read or write Health data.',
    explicitOnly: true,
    ascCapability: 'HEALTHKIT',
    granted: () => ({ 'com.apple.developer.healthkit': true, 'com.apple.developer.healthkit.access': [] }),
  }),
  cap({
    id: 'homekit',
    name: 'HomeKit',
    keys: ['com.apple.developer.homekit'],
    lost: () => 'It cannot control HomeKit accessories.',
    explicitOnly: true,
    ascCapability: 'HOMEKIT',
    granted: () => ({ 'com.apple.developer.homekit': true }),
  }),
  cap({
    id: 'siri',
    name: 'Siri',
    keys: ['com.apple.developer.siri'],
    lost: () => 'Siri and Shortcuts cannot use it.',
    explicitOnly: true,
    ascCapability: 'SIRIKIT',
    granted: () => ({ 'com.apple.developer.siri': true }),
  }),
  cap({
    id: 'wallet',
    name: 'Wallet',
    keys: ['com.apple.developer.pass-type-identifiers'],
    lost: () => 'It cannot add passes to Wallet.',
    explicitOnly: true,
    ascCapability: 'WALLET',
    granted: (team) => ({ 'com.apple.developer.pass-type-identifiers': [`${team}.*`] }),
  }),
  cap({
    id: 'game-center',
    name: 'Game Center',
    keys: ['com.apple.developer.game-center'],
    lost: () => 'Game Center will not sign in.',
    explicitOnly: true,
    ascCapability: 'GAME_CENTER',
    granted: () => ({ 'com.apple.developer.game-center': true }),
  }),
  cap({
    id: 'network-extensions',
    name: 'Network extensions',
    keys: ['com.apple.developer.networking.networkextension'],
    lost: () => 'Its VPN, content filter or proxy will not start.',
    explicitOnly: true,
    ascCapability: 'NETWORK_EXTENSIONS',
    granted: () => ({
      'com.apple.developer.networking.networkextension': [
        'app-proxy-provider',
        'content-filter-provider',
        'packet-tunnel-provider',
        'dns-proxy',
        'dns-settings',
        'relay',
      ],
    }),
  }),
  cap({
    id: 'personal-vpn',
    name: 'Personal VPN',
    keys: ['com.apple.developer.networking.vpn.api'],
    lost: () => 'Its VPN will not connect.',
    explicitOnly: true,
    ascCapability: 'PERSONAL_VPN',
    granted: () => ({ 'com.apple.developer.networking.vpn.api': ['allow-vpn'] }),
  }),
  cap({
    id: 'hotspot',
    name: 'Hotspot configuration',
    keys: ['com.apple.developer.networking.HotspotConfiguration'],
    lost: () => 'It cannot join Wi-Fi networks for you.',
    explicitOnly: true,
    ascCapability: 'HOT_SPOT',
    granted: () => ({ 'com.apple.developer.networking.HotspotConfiguration': true }),
  }),
  cap({
    id: 'multipath',
    name: 'Multipath',
    keys: ['com.apple.developer.networking.multipath'],
    lost: () => 'It cannot use Wi-Fi and cellular data at once.',
    explicitOnly: true,
    ascCapability: 'MULTIPATH',
    granted: () => ({ 'com.apple.developer.networking.multipath': true }),
  }),
  cap({
    id: 'wifi-info',
    name: 'Wi-Fi information',
    keys: ['com.apple.developer.networking.wifi-info'],
    lost: () => "It cannot read the Wi-Fi network's name.",
    explicitOnly: true,
    ascCapability: 'ACCESS_WIFI_INFORMATION',
    granted: () => ({ 'com.apple.developer.networking.wifi-info': true }),
  }),
  cap({
    id: 'nfc',
    name: 'NFC tag reading',
    keys: ['com.apple.developer.nfc.readersession.formats'],
    lost: () => 'It cannot read NFC tags.',
    explicitOnly: true,
    ascCapability: 'NFC_TAG_READING',
    granted: () => ({ 'com.apple.developer.nfc.readersession.formats': ['NDEF', 'TAG'] }),
  }),
  cap({
    id: 'wireless-accessory',
    name: 'Wireless accessory configuration',
    keys: ['com.apple.external-accessory.wireless-configuration'],
    lost: () => 'It cannot set up wireless accessories.',
    explicitOnly: true,
    ascCapability: 'WIRELESS_ACCESSORY_CONFIGURATION',
    granted: () => ({ 'com.apple.external-accessory.wireless-configuration': true }),
  }),
  cap({
    id: 'autofill',
    name: 'Password AutoFill provider',
    keys: ['com.apple.developer.authentication-services.autofill-credential-provider'],
    lost: () => 'It cannot fill its passwords into other apps.',
    explicitOnly: true,
    ascCapability: 'AUTOFILL_CREDENTIAL_PROVIDER',
    granted: () => ({
      'com.apple.developer.authentication-services.autofill-credential-provider': true,
    }),
  }),
  cap({
    id: 'inter-app-audio',
    name: 'Inter-App Audio',
    keys: ['inter-app-audio'],
    lost: () => 'It cannot send audio to or take audio from other music apps.',
    explicitOnly: true,
    ascCapability: 'INTER_APP_AUDIO',
    granted: () => ({ 'inter-app-audio': true }),
  }),
  cap({
    id: 'app-clip-link',
    name: 'App Clip link',
    keys: [
      'com.apple.developer.parent-application-identifiers',
      'com.apple.developer.on-demand-install-capable',
    ],
    lost: (who) => `${who} is no longer tied to the app it belongs to.`,
    explicitOnly: true,
  }),
  cap({
    id: 'data-protection',
    name: 'Data protection',
    keys: ['com.apple.developer.default-data-protection'],
    lost: () => 'Its files get the default protection instead of the one it asked for.',
    explicitOnly: false,
    ascCapability: 'DATA_PROTECTION',
  }),
];

/** Keys every signature carries that name the signer, not a capability (the team is reported apart). */
export const IDENTITY_KEYS: ReadonlySet<string> = new Set([
  'application-identifier',
  'com.apple.developer.team-identifier',
  'get-task-allow',
  'beta-reports-active',
]);

const byKey = new Map(CAPABILITIES.flatMap((c) => c.keys.map((key) => [key, c] as const)));

/** The capability a key belongs to; a key we do not know is a capability of its own, named by the key. */
export function capabilityOf(key: string): Capability {
  return (
    byKey.get(key) ??
    cap({
      id: key,
      name: key,
      keys: [key],
      lost: (who) => `${who} loses the entitlement ${key}; what depends on it will not work.`,
      explicitOnly: false,
    })
  );
}

/** How a sentence names the component: 'The app', 'The share extension', 'The Apple Watch app'. */
export function componentLabel(component: {
  kind: string;
  name: string;
  extensionPoint?: string | undefined;
}): string {
  switch (component.kind) {
    case 'app':
      return 'The app';
    case 'watch-app':
      return 'The Apple Watch app';
    case 'app-clip':
      return 'The App Clip';
    case 'app-extension':
      return `The ${EXTENSION_POINTS[component.extensionPoint ?? ''] ?? `${component.name} extension`}`;
    default:
      return `The ${component.name} framework`;
  }
}

/** NSExtensionPointIdentifier as a person calls the extension. */
const EXTENSION_POINTS: Record<string, string> = {
  'com.apple.share-services': 'share extension',
  'com.apple.widgetkit-extension': 'widget',
  'com.apple.widget-extension': 'Today widget',
  'com.apple.usernotifications.service': 'notification service extension',
  'com.apple.usernotifications.content-extension': 'notification content extension',
  'com.apple.keyboard-service': 'keyboard',
  'com.apple.intents-service': 'Siri intents extension',
  'com.apple.intents-ui-service': 'Siri intents extension',
  'com.apple.ui-services': 'action extension',
  'com.apple.fileprovider-nonui': 'file provider',
  'com.apple.photo-editing': 'photo editing extension',
  'com.apple.authentication-services-credential-provider-ui': 'password AutoFill extension',
  'com.apple.networkextension.packet-tunnel': 'VPN extension',
  'com.apple.broadcast-services-upload': 'broadcast extension',
  'com.apple.message-payload-provider': 'iMessage extension',
};

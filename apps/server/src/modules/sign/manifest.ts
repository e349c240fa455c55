import { buildXmlPlist } from '@sideport/ipa';

/**
 * The OTA install manifest iOS fetches from an itms-services link (docs/sign-service.md): one item,
 * its IPA as the software-package asset, and what the install dialog shows.
 */
export function installManifest(item: {
  ipaUrl: string;
  bundleId: string;
  bundleVersion: string;
  title: string;
}): string {
  return buildXmlPlist({
    items: [
      {
        assets: [{ kind: 'software-package', url: item.ipaUrl }],
        metadata: {
          'bundle-identifier': item.bundleId,
          'bundle-version': item.bundleVersion,
          kind: 'software',
          title: item.title,
        },
      },
    ],
  });
}

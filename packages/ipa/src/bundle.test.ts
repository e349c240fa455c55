import { describe, expect, it } from 'vitest';
import { describeBundle, findAppBundle, findMachOEntries, readInfoPlist } from './bundle.js';
import { IpaError } from './errors.js';
import { buildBinaryPlist, buildXmlPlist } from './plist.js';
import { buildZip, EXECUTABLE_MODE, FILE_MODE, type TestZipEntry } from './test-support/build-zip.js';
import { openZipFromBuffer, type ZipArchive } from './zip/index.js';

// A stand-in for src/macho's isMachO: thin 64-bit little-endian magic only.
const looksLikeMachO = (head: Buffer): boolean => head.length >= 4 && head.readUInt32LE(0) === 0xfeedfacf;
const machO = Buffer.concat([Buffer.from([0xcf, 0xfa, 0xed, 0xfe]), Buffer.alloc(60)]);
const app = 'Payload/Demo.app';
const info = {
  CFBundleIdentifier: 'com.example.demo',
  CFBundleExecutable: 'Demo',
  CFBundleShortVersionString: '2.1',
  CFBundleVersion: '210',
  MinimumOSVersion: '15.0',
};

async function withArchive<T>(entries: TestZipEntry[], use: (archive: ZipArchive) => Promise<T>): Promise<T> {
  const archive = await openZipFromBuffer(buildZip(entries));
  try {
    return await use(archive);
  } finally {
    archive.close();
  }
}

describe('findAppBundle', () => {
  it('finds the one Payload/*.app even without directory entries', async () => {
    await withArchive(
      [
        { name: `${app}/Info.plist`, data: 'x' },
        { name: 'iTunesMetadata.plist', data: 'x' },
      ],
      async (archive) => {
        expect(findAppBundle(archive.entries)).toEqual({ dir: app, name: 'Demo.app' });
      },
    );
  });

  it('refuses an IPA without one: NO_APP_BUNDLE', async () => {
    await withArchive(
      [
        { name: 'Payload/readme.txt', data: 'x' },
        { name: 'Other/X.app/Info.plist', data: 'x' },
      ],
      async (archive) => {
        expect(() => findAppBundle(archive.entries)).toThrow(
          new IpaError('NO_APP_BUNDLE', 'Expected one Payload/<Name>.app folder in the IPA, found none.'),
        );
      },
    );
  });

  it('refuses an IPA with two: SEVERAL_APP_BUNDLES', async () => {
    await withArchive(
      [{ name: 'Payload/B.app/Info.plist', data: 'x' }, { name: 'Payload/A.app/' }],
      async (archive) => {
        expect(() => findAppBundle(archive.entries)).toThrow(
          new IpaError(
            'SEVERAL_APP_BUNDLES',
            'Expected one Payload/<Name>.app folder in the IPA, found 2: A.app, B.app.',
          ),
        );
      },
    );
  });
});

describe('readInfoPlist', () => {
  it('reads a binary Info.plist', async () => {
    await withArchive([{ name: `${app}/Info.plist`, data: buildBinaryPlist(info) }], async (archive) => {
      expect(describeBundle(await readInfoPlist(archive, app), 'Info.plist')).toEqual({
        bundleId: 'com.example.demo',
        executable: 'Demo',
        shortVersion: '2.1',
        bundleVersion: '210',
        minimumOsVersion: '15.0',
      });
    });
  });

  it('reads an XML Info.plist', async () => {
    await withArchive([{ name: `${app}/Info.plist`, data: buildXmlPlist(info) }], async (archive) => {
      expect((await readInfoPlist(archive, app))['CFBundleIdentifier']).toBe('com.example.demo');
    });
  });

  it('refuses a bundle without one: INFO_PLIST_MISSING', async () => {
    await withArchive([{ name: `${app}/Demo`, data: machO }], async (archive) => {
      await expect(readInfoPlist(archive, app)).rejects.toThrow(
        new IpaError('INFO_PLIST_MISSING', 'Expected Payload/Demo.app/Info.plist in the IPA, found none.'),
      );
    });
  });

  it('refuses one without CFBundleExecutable: INFO_PLIST_INCOMPLETE', () => {
    expect(() => describeBundle({ CFBundleIdentifier: 'a.b' }, 'Info.plist')).toThrow(
      new IpaError(
        'INFO_PLIST_INCOMPLETE',
        'Expected Info.plist to name a CFBundleExecutable string, found none.',
      ),
    );
  });
});

describe('findMachOEntries', () => {
  const bundle = { dir: app, name: 'Demo.app' };
  const entries: TestZipEntry[] = [
    { name: `${app}/Info.plist`, data: buildBinaryPlist(info) },
    { name: `${app}/Demo`, data: machO, mode: EXECUTABLE_MODE },
    { name: `${app}/PkgInfo`, data: 'APPL????' },
    { name: `${app}/_CodeSignature/CodeResources`, data: machO },
    { name: `${app}/Frameworks/Kit.framework/Kit`, data: machO, mode: FILE_MODE },
    { name: `${app}/Frameworks/libswiftCore.dylib`, data: machO },
    { name: `${app}/PlugIns/Share.appex/Share`, data: machO },
    { name: `${app}/Watch/W.app/W`, data: machO },
    { name: `${app}/Watch/W.app/PlugIns/WK.appex/WK`, data: machO },
    { name: `${app}/icon.png`, data: machO },
  ];

  it('finds the executable first, then every Mach-O by its magic, whatever its name or folder', async () => {
    await withArchive(entries, async (archive) => {
      const found = await findMachOEntries(archive, bundle, 'Demo', looksLikeMachO);
      expect(found.map((e) => e.name.slice(app.length + 1))).toEqual([
        'Demo',
        'Frameworks/Kit.framework/Kit',
        'Frameworks/libswiftCore.dylib',
        'PlugIns/Share.appex/Share',
        'Watch/W.app/PlugIns/WK.appex/WK',
        'Watch/W.app/W',
        '_CodeSignature/CodeResources',
        'icon.png',
      ]);
    });
  });

  it('refuses a missing executable: EXECUTABLE_MISSING', async () => {
    await withArchive(entries, async (archive) => {
      await expect(findMachOEntries(archive, bundle, 'Nope', looksLikeMachO)).rejects.toThrow(
        'Expected the executable named by CFBundleExecutable at Payload/Demo.app/Nope, found none.',
      );
    });
  });

  it('refuses an executable that is not a Mach-O: MACHO_BAD_MAGIC', async () => {
    await withArchive([{ name: `${app}/Demo`, data: '#!/bin/sh\necho' }], async (archive) => {
      const error = await findMachOEntries(archive, bundle, 'Demo', looksLikeMachO).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(IpaError);
      expect((error as IpaError).code).toBe('MACHO_BAD_MAGIC');
      expect((error as IpaError).message).toBe(
        'Expected Payload/Demo.app/Demo to be a Mach-O executable, found bytes 0x23212f62696e2f73.',
      );
    });
  });
});

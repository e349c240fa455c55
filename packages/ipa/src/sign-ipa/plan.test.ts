import { describe, expect, it } from 'vitest';
import { openZip, openZipFromBuffer } from '../zip/index.js';
import { buildXmlPlist } from '../plist.js';
import { buildZip, FILE_MODE } from '../test-support/build-zip.js';
import { planSigning } from './plan.js';
import { fixtureIpa } from '../test-support/fixtures.js';

describe('planSigning', () => {
  it('plans the real app: one main bundle with its executable', async () => {
    const archive = await openZip(fixtureIpa);
    try {
      const plan = await planSigning(archive);
      expect(plan.app).toMatchObject({
        dir: 'Payload/very-capable-app.app',
        kind: 'app',
        bundleId: 'org.fastlane.very-capable-app',
        executable: 'Payload/very-capable-app.app/very-capable-app',
        isMain: true,
        looseCode: [],
      });
      expect(plan.inOrder).toHaveLength(1);
    } finally {
      archive.close();
    }
  });

  it('orders nested code inside-out and gives loose dylibs to their deepest bundle', async () => {
    // The fixture's Mach-O, reused as every piece of code of a made-up app.
    const source = await openZip(fixtureIpa);
    const machO = await source.readEntry(
      source.find('Payload/very-capable-app.app/very-capable-app')!,
      64 * 1024 * 1024,
    );
    source.close();
    const plist = (id: string, exe?: string) =>
      Buffer.from(buildXmlPlist({ CFBundleIdentifier: id, ...(exe ? { CFBundleExecutable: exe } : {}) }));
    const files: Record<string, Buffer> = {
      'Payload/A.app/Info.plist': plist('com.example.a', 'A'),
      'Payload/A.app/A': machO,
      'Payload/A.app/Frameworks/F.framework/Info.plist': plist('com.example.f', 'F'),
      'Payload/A.app/Frameworks/F.framework/F': machO,
      'Payload/A.app/Frameworks/libz.dylib': machO,
      'Payload/A.app/PlugIns/E.appex/Info.plist': plist('com.example.a.e', 'E'),
      'Payload/A.app/PlugIns/E.appex/E': machO,
      'Payload/A.app/PlugIns/E.appex/Frameworks/G.framework/Info.plist': plist('com.example.g', 'G'),
      'Payload/A.app/PlugIns/E.appex/Frameworks/G.framework/G': machO,
      'Payload/A.app/image.png': Buffer.from('not code'),
    };
    const zip = buildZip(Object.entries(files).map(([name, data]) => ({ name, data, mode: FILE_MODE })));
    const archive = await openZipFromBuffer(zip);
    const plan = await planSigning(archive);
    const order = plan.inOrder.map((b) => b.dir.replace('Payload/A.app', '~'));
    expect(order.indexOf('~/PlugIns/E.appex/Frameworks/G.framework')).toBeLessThan(
      order.indexOf('~/PlugIns/E.appex'),
    );
    expect(order.indexOf('~/PlugIns/E.appex')).toBeLessThan(order.indexOf('~'));
    expect(order.at(-1)).toBe('~');
    expect(plan.app.looseCode).toEqual(['Payload/A.app/Frameworks/libz.dylib']);
    const kinds = Object.fromEntries(plan.inOrder.map((b) => [b.bundleId, [b.kind, b.isMain]]));
    expect(kinds).toEqual({
      'com.example.a': ['app', true],
      'com.example.a.e': ['appex', true],
      'com.example.f': ['framework', false],
      'com.example.g': ['framework', false],
    });
    archive.close();
  });
});

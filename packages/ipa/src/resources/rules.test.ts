import { describe, expect, it } from 'vitest';
import { matchRule, RULES_V1, RULES_V2, type ResourceRule } from './rules.js';

/** The rule codesign's reading gives: every pattern as written, the heaviest match, the later on a tie. */
function byTheBook(rules: readonly ResourceRule[], path: string): ResourceRule | undefined {
  let best: ResourceRule | undefined;
  for (const rule of rules)
    if (new RegExp(rule.pattern).test(path) && (!best || (rule.weight ?? 1) >= (best.weight ?? 1)))
      best = rule;
  return best;
}

describe('matchRule', () => {
  // Paths where each pattern matches, nearly matches, or matches only in part.
  const paths = [
    'Info.plist',
    'PkgInfo',
    'embedded.mobileprovision',
    'embedded.provisionprofile',
    'version.plist',
    'Assets.car',
    '.DS_Store',
    'en.lproj/.DS_Store',
    'en.lproj/Main.strings',
    'en.lproj/locversion.plist',
    'Base.lproj/Main.storyboardc/Info.plist',
    'Base.lprojx/file',
    'Frameworks/Foo.framework/Foo',
    'Frameworks/Foo.framework.dSYM/Contents/Resources/DWARF/Foo',
    'App.app.dSYM',
    'App.app.dSYMs/file',
    'dir/App.dSYM',
    'a.dSYM.b/c',
    'Library/Spotlight/Importer.mdimporter/Contents/Info.plist',
    'PlugIns/Widget.appex/Info.plist',
    'lines\nwith.dSYM/a newline',
    'lines\nwith.lproj/a newline',
    `${'deep/'.repeat(200)}.dSYM`,
  ];

  it('picks the rule the patterns as written pick, for v1 and v2', () => {
    for (const rules of [RULES_V1, RULES_V2])
      for (const path of paths) expect(matchRule(rules, path), path).toBe(byTheBook(rules, path));
  });
});

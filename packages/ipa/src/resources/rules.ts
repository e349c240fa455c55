/**
 * The resource rules codesign writes for iOS app bundles (copied from the rules of an Xcode-signed
 * app's `_CodeSignature/CodeResources`). `rules` drives the v1 `files` seal (SHA-1 only), `rules2`
 * the v2 `files2` seal (SHA-1 and SHA-256, nested code by cdhash).
 */
export interface ResourceRule {
  pattern: string;
  omit?: boolean;
  optional?: boolean;
  nested?: boolean;
  weight?: number;
}

export const RULES_V1: readonly ResourceRule[] = [
  { pattern: '^' },
  { pattern: '^.*\\.lproj/', optional: true, weight: 1000 },
  { pattern: '^.*\\.lproj/locversion.plist$', omit: true, weight: 1100 },
  { pattern: '^Base\\.lproj/', weight: 1010 },
  { pattern: '^version.plist$' },
];

export const RULES_V2: readonly ResourceRule[] = [
  { pattern: '.*\\.dSYM($|/)', weight: 11 },
  { pattern: '^', weight: 20 },
  { pattern: '^(.*/)?\\.DS_Store$', omit: true, weight: 2000 },
  {
    pattern:
      '^(Frameworks|SharedFrameworks|PlugIns|Plug-ins|XPCServices|Helpers|MacOS|Library/(Automator|Spotlight|LoginItems))/',
    nested: true,
    weight: 10,
  },
  { pattern: '^.*' },
  { pattern: '^.*\\.lproj/', optional: true, weight: 1000 },
  { pattern: '^.*\\.lproj/locversion.plist$', omit: true, weight: 1100 },
  { pattern: '^Base\\.lproj/', weight: 1010 },
  { pattern: '^Info\\.plist$', omit: true, weight: 20 },
  { pattern: '^PkgInfo$', omit: true, weight: 20 },
  { pattern: '^[^/]+$', nested: true, weight: 10 },
  { pattern: '^embedded\\.provisionprofile$', weight: 20 },
  { pattern: '^version\\.plist$', weight: 20 },
];

const compiled = new Map<string, RegExp>();
/**
 * The pattern as a test: an unanchored pattern that starts with `.*` matches a path exactly when
 * the rest matches somewhere in it, and without the `.*` the search stays linear in the path's
 * length (with it, each start position scans to the end and back).
 */
const regex = (pattern: string) => {
  let re = compiled.get(pattern);
  if (!re) compiled.set(pattern, (re = new RegExp(pattern.startsWith('.*') ? pattern.slice(2) : pattern)));
  return re;
};

/**
 * The rule that governs a path: the matching rule of greatest weight (a rule without weight weighs 1);
 * on a tie the later, more specific rule wins ('^Info\\.plist$' omits over '^', both weight 20).
 */
export function matchRule(rules: readonly ResourceRule[], path: string): ResourceRule | undefined {
  let best: ResourceRule | undefined;
  for (const rule of rules) {
    if (!regex(rule.pattern).test(path)) continue;
    if (!best || (rule.weight ?? 1) >= (best.weight ?? 1)) best = rule;
  }
  return best;
}

/** The rules as they appear in the plist: `true` for a plain rule, else a dict of its flags. */
export function rulesPlist(rules: readonly ResourceRule[]) {
  return Object.fromEntries(
    rules.map(({ pattern, ...flags }) => {
      const entries = Object.entries(flags).filter(([, v]) => v !== undefined);
      return [pattern, entries.length === 0 ? true : Object.fromEntries(entries)];
    }),
  );
}

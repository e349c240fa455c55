export { buildCodeResources } from './code-resources.js';
export type { SealedFile, SealedNested } from './code-resources.js';
export { matchRule, RULES_V1, RULES_V2 } from './rules.js';
export type { ResourceRule } from './rules.js';

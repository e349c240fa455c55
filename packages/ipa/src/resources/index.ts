export { buildCodeResources, buildSealTemplate, fillSealTemplate } from './code-resources.js';
export type { SealedFile, SealedNested, SealSlot, SealTemplate } from './code-resources.js';
export { matchRule, RULES_V1, RULES_V2 } from './rules.js';
export type { ResourceRule } from './rules.js';

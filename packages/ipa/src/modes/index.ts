export { assertBundleId, createBundleIdRemap, createGroupRemap, remapInfoPlist } from './bundle-ids.js';
export type { BundleIdRemap } from './bundle-ids.js';
export { isAllowedBy, mergeEntitlements } from './entitlements.js';
export type { EntitlementsInput } from './entitlements.js';
export { assertMode, injectLoads, planInjection } from './inject.js';
export type { InjectedDylib, InjectionPlan, ModeDylibs, SignMode } from './inject.js';

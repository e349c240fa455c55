/** What a re-sign keeps of an app's capabilities: the components it reads, the catalogue, the report. */
export { readSignedComponents } from './components.js';
export type { ComponentKind, EntitlementValue, Entitlements, SignedComponent } from './components.js';
export { CAPABILITIES, capabilityOf, componentLabel } from './catalog.js';
export type { Capability } from './catalog.js';
export {
  APPLE_DEFAULT_CAPABILITIES,
  capabilityReport,
  creatableCapabilities,
  explicitAppIdProfile,
  fitsOneAppId,
  wildcardProfile,
} from './report.js';
export type {
  CapabilityOutcome,
  CapabilityReport,
  CapabilityReportInput,
  CapabilityStatus,
  ComponentReport,
  ReportProfile,
} from './report.js';

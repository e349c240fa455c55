/**
 * The designated requirement codesign writes for a developer or distribution certificate:
 *   identifier "<id>" and anchor apple generic and certificate leaf[subject.CN] = "<CN>"
 *   and certificate 1[field.1.2.840.113635.100.6.2.1] // exists
 * as text (for CodeResources) and compiled (Requirements blob, Security's requirement.h).
 */
import { CSMAGIC_REQUIREMENT, CSMAGIC_REQUIREMENTS, wrapBlob } from './blobs.js';

// ExprOp values from Security's requirement.h
const opIdent = 2;
const opAnd = 6;
const opCertField = 11;
const opCertGeneric = 14;
const opAppleGenericAnchor = 15;
// MatchOperation values
const matchExists = 0;
const matchEqual = 1;
// kSecDesignatedRequirementType
const designatedRequirementType = 3;
// Requirement kind: expression
const exprForm = 1;
// 1.2.840.113635.100.6.2.1 (Apple WWDR intermediate marker), DER-encoded OID body
const WWDR_MARKER_OID = Buffer.from('2a864886f763640602 01'.replace(/ /g, ''), 'hex');

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(value >>> 0, 0);
  return b;
}

/** Data in requirement expressions: length, bytes, zero-padded to 4 bytes. */
function data(bytes: Buffer): Buffer {
  const padding = (4 - (bytes.length % 4)) % 4;
  return Buffer.concat([u32(bytes.length), bytes, Buffer.alloc(padding)]);
}

export interface RequirementSubject {
  readonly identifier: string;
  /** Common name of the signing certificate; without one the requirement names the identifier only. */
  readonly commonName?: string;
}

function expression(subject: RequirementSubject): Buffer {
  const ident = Buffer.concat([u32(opIdent), data(Buffer.from(subject.identifier, 'utf8'))]);
  if (subject.commonName === undefined) return ident;
  const anchor = u32(opAppleGenericAnchor);
  const leaf = Buffer.concat([u32(opCertField), u32(0), data(Buffer.from('subject.CN')), u32(matchEqual), data(Buffer.from(subject.commonName, 'utf8'))]);
  const wwdr = Buffer.concat([u32(opCertGeneric), u32(1), data(WWDR_MARKER_OID), u32(matchExists)]);
  // "a and b and c and d" parses left-associatively: and(and(and(a, b), c), d)
  return Buffer.concat([u32(opAnd), u32(opAnd), u32(opAnd), ident, anchor, leaf, wwdr]);
}

/** The Requirements blob (special slot 2): a set holding the designated requirement. */
export function buildRequirementsBlob(subject: RequirementSubject): Buffer {
  const requirement = wrapBlob(CSMAGIC_REQUIREMENT, Buffer.concat([u32(exprForm), expression(subject)]));
  // RequirementSet: magic, length, count, then (type, offset) pairs
  const header = Buffer.concat([u32(1), u32(designatedRequirementType), u32(12 + 8)]);
  return wrapBlob(CSMAGIC_REQUIREMENTS, Buffer.concat([header, requirement]));
}

/** The same requirement as text, as CodeResources records it for nested code. */
export function requirementText(subject: RequirementSubject): string {
  const ident = `identifier "${subject.identifier}"`;
  if (subject.commonName === undefined) return ident;
  return `${ident} and anchor apple generic and certificate leaf[subject.CN] = "${subject.commonName.replace(/"/g, '\\"')}" and certificate 1[field.1.2.840.113635.100.6.2.1] /* exists */`;
}

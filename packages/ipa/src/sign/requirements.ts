/**
 * The designated requirement codesign writes, as text (for CodeResources) and compiled
 * (Requirements blob, Security's requirement.h). For an Apple-issued developer or distribution
 * certificate:
 *   identifier "<id>" and anchor apple generic and certificate leaf[subject.CN] = "<CN>"
 *   and certificate 1[field.1.2.840.113635.100.6.2.1] // exists
 * and for any other chain, pinned to its root: identifier "<id>" and certificate root = H"<sha1>".
 * codesign and zsign write these rather than the empty set ldid writes: the designated requirement
 * is how the system recognises later builds of the same app (keychain and app group access on
 * macOS, `codesign -v -R`), and an Xcode build carries one. iOS does not evaluate it on install.
 */
import { createHash } from 'node:crypto';
import forge from 'node-forge';
import { CSMAGIC_REQUIREMENT, CSMAGIC_REQUIREMENTS, wrapBlob } from './blobs.js';

// ExprOp values from Security's requirement.h
const opIdent = 2;
const opAnchorHash = 4;
const opAnd = 6;
const opCertField = 11;
const opCertGeneric = 14;
const opAppleGenericAnchor = 15;
// MatchOperation values
const matchExists = 0;
const matchEqual = 1;
// kSecDesignatedRequirementType
const designatedRequirementType = 3;
// Certificate slots: 0 the leaf, -1 the anchor (root), positive counts up from the leaf.
const anchorSlot = -1;
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
  /** Common name of an Apple-issued signing certificate: the "anchor apple generic" form. */
  readonly commonName?: string;
  /** SHA-1 of the root of a chain Apple did not issue: the `certificate root = H"..."` form. */
  readonly anchorSha1?: Buffer;
}

const APPLE = 'Apple Inc.';

/**
 * The requirement subject codesign would choose for this identity: the Apple form when Apple
 * issued the certificate, else the hash of the chain's root (the last certificate, or the leaf
 * when it signed itself).
 */
export function requirementSubjectFor(
  identifier: string,
  identity: {
    readonly certificate: forge.pki.Certificate;
    readonly chain: readonly { readonly raw: Buffer }[];
  },
): RequirementSubject {
  const leaf = identity.certificate;
  const commonName = leaf.subject.getField('CN')?.value as string | undefined;
  if (leaf.issuer.getField('O')?.value === APPLE && commonName !== undefined)
    return { identifier, commonName };
  const root = identity.chain.at(-1);
  const der =
    root?.raw ?? Buffer.from(forge.asn1.toDer(forge.pki.certificateToAsn1(leaf)).getBytes(), 'binary');
  return { identifier, anchorSha1: createHash('sha1').update(der).digest() };
}

function expression(subject: RequirementSubject): Buffer {
  const ident = Buffer.concat([u32(opIdent), data(Buffer.from(subject.identifier, 'utf8'))]);
  if (subject.commonName === undefined && subject.anchorSha1 !== undefined) {
    return Buffer.concat([u32(opAnd), ident, u32(opAnchorHash), u32(anchorSlot), data(subject.anchorSha1)]);
  }
  if (subject.commonName === undefined) return ident;
  const anchor = u32(opAppleGenericAnchor);
  const leaf = Buffer.concat([
    u32(opCertField),
    u32(0),
    data(Buffer.from('subject.CN')),
    u32(matchEqual),
    data(Buffer.from(subject.commonName, 'utf8')),
  ]);
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
  if (subject.commonName === undefined && subject.anchorSha1 !== undefined)
    return `${ident} and certificate root = H"${subject.anchorSha1.toString('hex')}"`;
  if (subject.commonName === undefined) return ident;
  return `${ident} and anchor apple generic and certificate leaf[subject.CN] = "${subject.commonName.replace(/"/g, '\\"')}" and certificate 1[field.1.2.840.113635.100.6.2.1] /* exists */`;
}

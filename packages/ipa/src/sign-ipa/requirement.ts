import type forge from 'node-forge';

/**
 * The designated requirement of code we sign, in requirement-language text, as codesign derives
 * it for an Apple-issued signing certificate: the identifier, Apple's anchor, the leaf's common
 * name and the WWDR intermediate marker. CodeResources seals nested code with it.
 */
export function designatedRequirement(identifier: string, certificate: forge.pki.Certificate): string {
  const cn = certificate.subject.getField('CN')?.value as string | undefined;
  const quoted = (s: string) => `"${s.replace(/["\\]/g, '\\$&')}"`;
  const leaf = cn ? ` and certificate leaf[subject.CN] = ${quoted(cn)}` : '';
  return `identifier ${quoted(identifier)} and anchor apple generic${leaf} and certificate 1[field.1.2.840.113635.100.6.2.1] /* exists */`;
}

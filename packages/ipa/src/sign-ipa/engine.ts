import type { SigningIdentity } from '../identity.js';
import { createCmsSigner } from '../sign/cms.js';
import { signMachO, type CodeSignInput } from '../sign/macho-sign.js';
import { signMachOStream } from '../sign/macho-sign-stream.js';
import type { MachOSigner, MachOSignRequest } from './sign-ipa.js';

/** The Mach-O signing engine of this package, bound to one identity. */
export function createMachOSigner(identity: SigningIdentity, clock: () => Date = () => new Date()): MachOSigner {
  const cms = createCmsSigner(identity);
  const commonName = identity.certificate.subject.getField('CN')?.value as string | undefined;
  const inputOf = (request: MachOSignRequest): CodeSignInput => ({
    identifier: request.identifier,
    teamId: request.teamId,
    isMainBinary: request.isMainExecutable,
    signer: cms,
    now: clock(),
    ...(commonName ? { commonName } : {}),
    ...(request.infoPlist ? { infoPlist: request.infoPlist } : {}),
    ...(request.codeResources ? { codeResources: request.codeResources } : {}),
    ...(request.entitlements ? { entitlements: request.entitlements } : {}),
  });
  return {
    sign(binary, request) {
      const result = signMachO(binary, request.identifier, inputOf(request));
      return { signed: result.bytes, cdhash: result.cdHash };
    },
    async signStream(read, sizeBytes, request, sink) {
      const result = await signMachOStream(read, sizeBytes, request.identifier, inputOf(request), sink);
      return { cdhash: result.cdHash, sizeBytes: result.sizeBytes };
    },
  };
}

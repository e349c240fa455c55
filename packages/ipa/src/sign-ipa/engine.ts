import type { SigningIdentity } from '../identity.js';
import { createCmsSigner } from '../sign/cms.js';
import { signMachO, type CodeSignInput } from '../sign/macho-sign.js';
import { signMachOStream } from '../sign/macho-sign-stream.js';
import { requirementSubjectFor } from '../sign/requirements.js';
import type { MachOSigner, MachOSignRequest } from './signer.js';

/** The Mach-O signing engine of this package, bound to one identity. */
export function createMachOSigner(
  identity: SigningIdentity,
  clock: () => Date = () => new Date(),
): MachOSigner {
  const cms = createCmsSigner(identity);
  // The designated requirement's form depends on who issued the certificate, not on the binary.
  const { commonName, anchorSha1 } = requirementSubjectFor('', identity);
  const inputOf = (request: MachOSignRequest): CodeSignInput => ({
    identifier: request.identifier,
    teamId: request.teamId,
    isMainBinary: request.isMainExecutable,
    ...(request.appNeedsSha1 === true ? { appNeedsSha1: true } : {}),
    signer: cms,
    now: clock(),
    ...(commonName === undefined ? {} : { commonName }),
    ...(anchorSha1 === undefined ? {} : { anchorSha1 }),
    ...(request.infoPlist ? { infoPlist: request.infoPlist } : {}),
    ...(request.codeResources ? { codeResources: request.codeResources } : {}),
    ...(request.entitlements ? { entitlements: request.entitlements } : {}),
  });
  return {
    sign(binary, request) {
      const result = signMachO(binary, request.path ?? request.identifier, inputOf(request));
      return { signed: result.bytes, cdhash: result.cdHash };
    },
    async signStream(read, sizeBytes, request, sink, options) {
      const result = await signMachOStream(
        read,
        sizeBytes,
        request.path ?? request.identifier,
        inputOf(request),
        sink,
        options,
      );
      return { cdhash: result.cdHash, sizeBytes: result.sizeBytes };
    },
  };
}

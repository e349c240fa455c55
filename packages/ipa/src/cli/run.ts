import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { check, type CheckReport } from '../check.js';
import { IpaError } from '../errors.js';
import { describeBundle, findAppBundle, findMachOEntries, readInfoPlist } from '../bundle.js';
import { fetchCaIssuer, type IssuerFetcher } from '../chain.js';
import { completeIdentityChain, loadIdentity } from '../identity.js';
import { defaultMachOInspector } from '../macho-inspector.js';
import { signatureChains } from '../sign/signature-chain.js';
import { openZip } from '../zip/index.js';
import { assertProfileUsable, parseProfile, type Profile } from '../profile.js';
import { createProgressReporter } from './progress.js';
import { createMachOSigner } from '../sign-ipa/engine.js';
import { signIpa } from '../sign-ipa/sign-ipa.js';
import type { SignMode } from '../sign-ipa/modes.js';
import { basename, join } from 'node:path';

interface SignCliOptions {
  output: string;
  p12: string;
  passwordEnv: string;
  profile: string;
  mode?: number;
  dylib?: string[];
  bundleIdPrefix?: string;
  cacheDir?: string;
  chain?: string[];
  substrate?: string;
}

export interface CliIo {
  stdout: { write(text: string): void };
  stderr: { write(text: string): void; readonly isTTY: boolean };
  /** Environment variables, read only for --password-env. */
  env: Readonly<Record<string, string | undefined>>;
  now: () => Date;
}

/** Exit codes: 0 success (or decrypted), 1 encrypted (check), 2 any error. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let exitCode = 0;
  const program = new Command('sideport-ipa')
    .description('Read IPAs, check they are decrypted, and re-sign iOS apps.')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });

  program
    .command('info')
    .description('print what the IPA holds, as JSON')
    .argument('<ipa>', 'path of the .ipa')
    .action(async (ipa: string) => {
      io.stdout.write(`${JSON.stringify(await checkWithProgress(ipa, io), null, 2)}\n`);
    });

  program
    .command('check')
    .description('exit 0 when every Mach-O is decrypted, 1 when one is encrypted, 2 on an error')
    .argument('<ipa>', 'path of the .ipa')
    .action(async (ipa: string) => {
      const report = await checkWithProgress(ipa, io);
      io.stdout.write(`${describeCheck(report)}\n`);
      exitCode = report.decrypted ? 0 : 1;
    });

  program
    .command('verify')
    .description(
      "exit 0 when every Mach-O's signature carries its signer's chain up to a root, 1 when one does not",
    )
    .argument('<ipa>', 'path of the signed .ipa')
    .action(async (ipa: string) => {
      const lines = await verifyChains(ipa);
      io.stdout.write(`${lines.text.join('\n')}\n`);
      exitCode = lines.complete ? 0 : 1;
    });

  program
    .command('profile')
    .description('print a provisioning profile as JSON')
    .argument('<file>', 'path of the .mobileprovision')
    .action(async (file: string) => {
      const profile = parseProfile(await readInput(file, 'provisioning profile'));
      io.stdout.write(`${JSON.stringify(summarizeProfile(profile, io.now()), null, 2)}\n`);
    });

  program
    .command('sign')
    .description('re-sign an IPA with a certificate and provisioning profile')
    .argument('<ipa>', 'path of the .ipa')
    .requiredOption('-o, --output <file>', 'where to write the signed .ipa')
    .requiredOption('--p12 <file>', 'PKCS#12 export of the signing certificate and key')
    .requiredOption('--password-env <VAR>', 'name of the environment variable holding the .p12 password')
    .requiredOption('--profile <file>', 'provisioning profile to embed')
    .addOption(new Option('--mode <n>', 'signing mode').argParser(parseNonNegativeInteger))
    .option('--dylib <file...>', 'modes 1-3: dylibs to inject before signing')
    .option(
      '--substrate <file>',
      'modes 1-3: a CydiaSubstrate replacement to bundle; injected dylibs load it instead',
    )
    .option(
      '--bundle-id-prefix <id>',
      "mode 4: the copy's bundle identifier; bundles under the app's id keep their suffix",
    )
    .option('--cache-dir <dir>', 'keep resource digests per app version here, so signing it again is quick')
    .option(
      '--chain <file...>',
      "issuer certificates to embed (PEM or DER), e.g. Apple's WWDR intermediate and root",
    )
    .action(async (ipa: string, options: SignCliOptions) => {
      const password = io.env[options.passwordEnv];
      if (password === undefined) {
        throw new CliFailure(
          `Expected the .p12 password in the environment variable ${options.passwordEnv}, found it unset.`,
        );
      }
      // Check the inputs now, so a wrong password or stale profile is reported before any work.
      const chain = await Promise.all(
        (options.chain ?? []).map((file) => readInput(file, 'chain certificate')),
      );
      // The signature carries the leaf's issuers up to a root: from the .p12 and --chain, else its
      // CA Issuers address (kept in --cache-dir), else Apple's shipped CA certificates.
      const identity = loadIdentity(
        await completeIdentityChain(
          { p12: await readInput(options.p12, '.p12 file'), password, chain },
          { fetchIssuer: keptIssuers(options.cacheDir) },
        ),
      );
      const profileBytes = await readInput(options.profile, 'provisioning profile');
      assertProfileUsable(parseProfile(profileBytes), identity.certificate, io.now());
      const inject = await Promise.all(
        (options.dylib ?? []).map(async (file) => ({
          name: basename(file),
          bytes: await readInput(file, 'dylib'),
        })),
      );
      const substrate = options.substrate
        ? { name: basename(options.substrate), bytes: await readInput(options.substrate, 'substrate dylib') }
        : undefined;
      const progress = createProgressReporter(io.stderr, 'Signed');
      try {
        const report = await signIpa({
          input: ipa,
          output: options.output,
          identity,
          profile: profileBytes,
          signer: createMachOSigner(identity, io.now),
          now: io.now(),
          mode: (options.mode ?? 0) as SignMode,
          inject,
          ...(substrate ? { substrate } : {}),
          ...(options.bundleIdPrefix ? { bundleIdPrefix: options.bundleIdPrefix } : {}),
          ...(options.cacheDir ? { cacheDir: options.cacheDir } : {}),
          onProgress: ({ bundle, done, total }) => progress.report({ path: bundle, done, total }),
        });
        progress.finish();
        io.stdout.write(`Signed ${report.bundles.length} bundle(s) into ${options.output}.\n`);
      } catch (err) {
        progress.finish();
        throw err;
      }
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return exitCode;
  } catch (err) {
    return reportFailure(err, io);
  }
}

class CliFailure extends Error {}

/** Fetches CA Issuers addresses, keeping each answer under `cacheDir` (when given) so it is fetched once. */
function keptIssuers(cacheDir: string | undefined): IssuerFetcher {
  if (cacheDir === undefined) return (url) => fetchCaIssuer(url);
  const folder = join(cacheDir, 'ca-issuers');
  return async (url) => {
    const file = join(folder, `${createHash('sha256').update(url).digest('hex')}.cer`);
    const kept = await readFile(file).catch(() => undefined);
    if (kept !== undefined) return kept;
    const fetched = await fetchCaIssuer(url);
    await mkdir(folder, { recursive: true });
    await writeFile(`${file}.tmp`, fetched);
    await rename(`${file}.tmp`, file);
    return fetched;
  };
}

/** One line per signed slice of every Mach-O: its signer and certificates, or what its chain lacks. */
async function verifyChains(ipa: string): Promise<{ text: string[]; complete: boolean }> {
  const archive = await openZip(ipa);
  try {
    const bundle = findAppBundle(archive.entries);
    const info = describeBundle(await readInfoPlist(archive, bundle.dir), `${bundle.dir}/Info.plist`);
    const entries = await findMachOEntries(archive, bundle, info.executable, defaultMachOInspector.isMachO);
    const text: string[] = [];
    let complete = true;
    for (const entry of entries) {
      const bytes = await archive.readEntry(entry, 2 * 1024 * 1024 * 1024 - 1);
      for (const report of signatureChains(bytes, entry.name)) {
        if (!report.chainComplete) {
          complete = false;
          text.push(report.problem!);
        } else {
          text.push(
            `${entry.name} (${report.arch}): signed by "${report.signer}", carrying ${report.certificates.map((n) => `"${n}"`).join(', ')}: its chain is complete.`,
          );
        }
      }
    }
    return { text, complete };
  } finally {
    archive.close();
  }
}

function reportFailure(err: unknown, io: CliIo): number {
  if (err instanceof CommanderError) {
    // Commander has already printed its own message (or the help text).
    return err.exitCode === 0 ? 0 : 2;
  }
  if (err instanceof IpaError || err instanceof CliFailure) {
    io.stderr.write(`${err.message}\n`);
    return 2;
  }
  io.stderr.write(`Unexpected failure: ${err instanceof Error ? err.message : String(err)}\n`);
  return 2;
}

async function checkWithProgress(ipa: string, io: CliIo): Promise<CheckReport> {
  const progress = createProgressReporter(io.stderr, 'Read Mach-O');
  try {
    return await check(ipa, { onProgress: progress.report });
  } finally {
    progress.finish();
  }
}

function describeCheck(report: CheckReport): string {
  const name = `${report.bundleId} ${report.shortVersion ?? '?'} (${report.bundleVersion ?? '?'})`;
  if (report.decrypted) {
    return `${name} is decrypted: all ${report.machOs.length} Mach-O files have cryptid 0.`;
  }
  const encrypted = report.machOs.flatMap((machO) =>
    machO.slices.filter((s) => s.cryptid !== 0).map((s) => `${machO.path} (${s.arch})`),
  );
  return `${name} is encrypted: ${encrypted.join(', ')} ${encrypted.length === 1 ? 'has' : 'have'} a non-zero cryptid.`;
}

function summarizeProfile(profile: Profile, now: Date): Record<string, unknown> {
  return {
    name: profile.name,
    uuid: profile.uuid,
    teamId: profile.teamId,
    teamName: profile.teamName,
    appIdName: profile.appIdName,
    applicationIdentifier: profile.applicationIdentifier,
    platforms: profile.platforms,
    creationDate: profile.creationDate.toISOString(),
    expirationDate: profile.expirationDate.toISOString(),
    isExpired: profile.isExpired(now),
    provisionsAllDevices: profile.provisionsAllDevices,
    provisionedDevices: profile.provisionedDevices,
    entitlements: profile.entitlements,
    developerCertificates: profile.developerCertificates.map((cert) => ({
      commonName: cert.commonName ?? null,
      sha1Fingerprint: cert.sha1Fingerprint,
    })),
    isSigned: profile.isSigned,
  };
}

async function readInput(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    throw new CliFailure(
      `Expected a ${what} at ${path}, found none (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}).`,
    );
  }
}

function parseNonNegativeInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0) throw new InvalidArgumentError('Expected a whole number.');
  return number;
}

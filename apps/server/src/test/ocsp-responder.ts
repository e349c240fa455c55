/**
 * A real OCSP responder (RFC 6960) for tests: `openssl ocsp` answering from an index file, as a
 * CA run with `openssl ca` keeps one. A certificate is good or revoked as `setStatus` writes its
 * line; one the index does not list is unknown. The responder signs with the CA's key, or with a
 * delegated responder certificate when given one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface OcspResponder {
  /** http://127.0.0.1:port/ : set it as OCSP_URL, or name it in a certificate's AIA. */
  readonly url: string;
  /**
   * Marks a certificate (its PEM, or its serial in hex) good or revoked (at `revokedAt`); the
   * responder answers so from then on.
   */
  setStatus(
    certificate: string | { serial: string },
    status: 'good' | 'revoked',
    revokedAt?: Date,
  ): Promise<void>;
  /** Requests answered so far. */
  requestCount(): number;
  /** The responder goes away (an outage): its port refuses every request until `start`. */
  stop(): Promise<void>;
  /** Back on the same port, answering from the same index. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export interface OcspResponderOptions {
  caPem: string;
  caKeyPem: string;
  /** A delegated responder (a certificate the CA issued for OCSP signing) and its key; the CA signs otherwise. */
  signer?: { certPem: string; keyPem: string };
  /** nextUpdate this many minutes after each answer; none when unset. */
  nextUpdateMinutes?: number;
}

/** openssl's time form in index files: YYMMDDHHMMSSZ. */
const indexTime = (date: Date) =>
  date.toISOString().replace(/^\d\d(\d\d)-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d).*$/, '$1$2$3$4$5$6Z');

/** A serial as openssl's index writes it: upper-case hex, whole bytes, no leading zero byte. */
const indexSerial = (serial: string) => {
  let hex = serial.toUpperCase().replace(/^0+/, '');
  if (hex.length % 2) hex = `0${hex}`;
  return hex || '00';
};

export async function startOcspResponder(options: OcspResponderOptions): Promise<OcspResponder> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sideport-ocsp-'));
  writeFileSync(path.join(dir, 'ca.pem'), options.caPem);
  writeFileSync(path.join(dir, 'signer.pem'), options.signer?.certPem ?? options.caPem);
  writeFileSync(path.join(dir, 'signer.key'), options.signer?.keyPem ?? options.caKeyPem, { mode: 0o600 });
  const lines = new Map<string, string>();
  const writeIndex = () =>
    writeFileSync(path.join(dir, 'index.txt'), [...lines.values()].map((l) => `${l}\n`).join(''));
  writeIndex();

  let child: ChildProcess | undefined;
  let answered = 0;
  let port = 0;

  async function start() {
    const args = [
      'ocsp',
      '-index',
      'index.txt',
      '-CA',
      'ca.pem',
      '-rsigner',
      'signer.pem',
      '-rkey',
      'signer.key',
      '-port',
      String(port),
      '-ignore_err',
    ];
    if (options.nextUpdateMinutes !== undefined) args.push('-nmin', String(options.nextUpdateMinutes));
    const started = spawn('openssl', args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stderr!.on('data', (chunk: Buffer) => {
      answered += chunk.toString().split('Received request').length - 1;
    });
    // It prints "ACCEPT [::]:<port> PID=<pid>" once it listens.
    port = await new Promise<number>((resolve, reject) => {
      let output = '';
      started.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /ACCEPT .*:(\d+) PID=/.exec(output);
        if (match) resolve(Number(match[1]));
      });
      started.once('exit', (code) => reject(new Error(`openssl ocsp exited (${code}): ${output}`)));
    });
  }

  async function stop() {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGTERM');
    });
  }

  await start();
  return {
    url: `http://127.0.0.1:${port}/`,
    async setStatus(certificate, status, revokedAt = new Date()) {
      // The responder finds certificates by serial; the expiry and subject columns only describe them.
      const cert = typeof certificate === 'string' ? new X509Certificate(certificate) : undefined;
      const serial = indexSerial(cert?.serialNumber ?? (certificate as { serial: string }).serial);
      const expiry = indexTime(cert ? new Date(cert.validTo) : new Date(Date.now() + 365 * 86_400_000));
      const subject = cert ? `/${cert.subject.split('\n').join('/')}` : '/CN=unknown';
      lines.set(
        serial,
        [
          status === 'good' ? 'V' : 'R',
          expiry,
          status === 'good' ? '' : indexTime(revokedAt),
          serial,
          'unknown',
          subject,
        ].join('\t'),
      );
      writeIndex();
      // openssl ocsp notices a changed index only after the next request: it starts again on the same port.
      await stop();
      await start();
    },
    requestCount: () => answered,
    stop,
    async start() {
      if (!child) await start();
    },
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

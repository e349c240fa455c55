import { useEffect, useRef, useState } from 'react';

/** Hosts only the machine itself reaches: a phone that opens them finds nothing (or itself). */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\]|0\.0\.0\.0|.*\.localhost)$/i;

/** A URL a phone cannot open: its host, or the host of a link it carries (the install manifest), is loopback. */
export function isLoopbackUrl(url: string): boolean {
  const hosts = [url, ...new URL(url).searchParams.values()].flatMap((u) => {
    try {
      return [new URL(u).hostname];
    } catch {
      return [];
    }
  });
  return hosts.some((host) => LOOPBACK.test(host));
}

export const UNREACHABLE_FROM_PHONE =
  "A phone cannot open this server's address (localhost): set PUBLIC_URL on the server to an address the phone reaches, then try again.";

/**
 * A link to open on the iPhone, as a QR code its camera reads, titled with what it does (`label`),
 * with one line on what to do there: itms-services installs and the enrollment profile work only on
 * iOS, and people often browse from a computer. It scrolls into view when it appears. A URL on a
 * loopback host is not encoded: the operator is told to set PUBLIC_URL. The QR library loads with
 * the first code shown.
 */
export function PhoneQr({ url, label, instruction }: { url: string; label: string; instruction: string }) {
  const [svg, setSvg] = useState<string | null>(null);
  const box = useRef<HTMLDivElement>(null);
  const isUnreachable = isLoopbackUrl(url);
  useEffect(() => {
    box.current?.scrollIntoView({ block: 'center' });
    box.current?.focus({ preventScroll: true });
  }, [url]);
  useEffect(() => {
    if (isUnreachable) return;
    let isCurrent = true;
    void import('qrcode').then(async (qr) => {
      const text = await qr.toString(url, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
      if (isCurrent) setSvg(text);
    });
    return () => {
      isCurrent = false;
    };
  }, [url, isUnreachable]);
  const title = label.charAt(0).toUpperCase() + label.slice(1);
  return (
    <div
      ref={box}
      tabIndex={-1}
      role="region"
      aria-label={title}
      className="d-flex flex-wrap align-items-center gap-3 border rounded p-3 my-2 phone-qr"
      data-testid="phone-qr"
    >
      <p className="w-100 mb-0 fw-semibold" data-testid="phone-qr-title">
        {title}
      </p>
      {isUnreachable ? (
        <p className="mb-0 text-danger-emphasis" role="alert" data-testid="phone-qr-unreachable">
          {UNREACHABLE_FROM_PHONE}
        </p>
      ) : svg ? (
        <img
          className="qr-code bg-white"
          src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`}
          alt={`QR code: ${label}`}
          data-url={url}
        />
      ) : (
        <div className="qr-code skeleton" role="status" aria-label="Making the QR code" />
      )}
      {!isUnreachable && (
        <p className="mb-0 flex-grow-1" style={{ flexBasis: '12rem' }}>
          {instruction}
        </p>
      )}
    </div>
  );
}

/** The page on this site that starts an itms-services install on the iPhone that opens it. */
export const phoneInstallUrl = (itmsUrl: string) =>
  `${window.location.origin}/install?manifest=${encodeURIComponent(
    new URL(itmsUrl.replace(/^itms-services:\/\//, 'https://x/')).searchParams.get('url') ?? '',
  )}`;

import { useEffect, useState } from 'react';

/**
 * A link to open on the iPhone, as a QR code its camera reads, with one line on what to do there:
 * itms-services installs and the enrollment profile work only on iOS, and people often browse
 * from a computer. The QR library loads with the first code shown.
 */
export function PhoneQr({ url, label, instruction }: { url: string; label: string; instruction: string }) {
  const [svg, setSvg] = useState<string | null>(null);
  useEffect(() => {
    let isCurrent = true;
    void import('qrcode').then(async (qr) => {
      const text = await qr.toString(url, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
      if (isCurrent) setSvg(text);
    });
    return () => {
      isCurrent = false;
    };
  }, [url]);
  return (
    <div
      className="d-flex flex-wrap align-items-center gap-3 border rounded p-3 my-2 phone-qr"
      data-testid="phone-qr"
    >
      {svg ? (
        <img
          className="qr-code bg-white"
          src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`}
          alt={`QR code: ${label}`}
          data-url={url}
        />
      ) : (
        <div className="qr-code skeleton" role="status" aria-label="Making the QR code" />
      )}
      <p className="mb-0 flex-grow-1" style={{ flexBasis: '12rem' }}>
        {instruction}
      </p>
    </div>
  );
}

/** The page on this site that starts an itms-services install on the iPhone that opens it. */
export const phoneInstallUrl = (itmsUrl: string) =>
  `${window.location.origin}/install?manifest=${encodeURIComponent(
    new URL(itmsUrl.replace(/^itms-services:\/\//, 'https://x/')).searchParams.get('url') ?? '',
  )}`;

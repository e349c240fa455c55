import { useEffect, useRef } from 'react';
import { useSearchParams } from 'react-router';
import { usePageTitle } from '../../lib/page-title';

/**
 * The manifest of a sign of this site (/files/sign/...), or null: anything else is not ours to
 * install (a link made to look like this page must not install someone else's app).
 */
export function ownManifest(manifest: string | null, origin: string): string | null {
  if (!manifest) return null;
  try {
    const url = new URL(manifest);
    return url.origin === origin && url.pathname.startsWith('/files/sign/') ? url.toString() : null;
  } catch {
    return null;
  }
}

/**
 * /install?manifest=...: what the QR code of a computer's Install opens on the iPhone. It needs no
 * sign-in (the manifest is on a signed URL that expires) and starts the install as the iPhone's own
 * Install button would.
 */
export function InstallPage() {
  usePageTitle('Install');
  const [params] = useSearchParams();
  const manifest = ownManifest(params.get('manifest'), window.location.origin);
  const itms = manifest && `itms-services://?action=download-manifest&url=${encodeURIComponent(manifest)}`;
  const started = useRef(false);
  useEffect(() => {
    if (!itms || started.current) return;
    started.current = true;
    window.location.assign(itms);
  }, [itms]);
  return (
    <section className="mx-auto my-4 text-center" style={{ maxWidth: '32rem' }}>
      <h1 className="fs-4">Install</h1>
      {itms ? (
        <>
          <p>iOS asks whether to install the app: tap Install, then find it on the Home Screen.</p>
          <a className="btn btn-primary" href={itms}>
            Install again
          </a>
        </>
      ) : (
        <p>This install link is not valid. Press Install again on the computer for a new one.</p>
      )}
    </section>
  );
}

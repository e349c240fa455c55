import { useEffect, useRef, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { alertFailure, openWithToken } from '../../lib/api';
import { usePageTitle } from '../../lib/page-title';
import { modelName } from './device-models';
import { ADD_DEVICE_NOTICE } from './messages';
import { infoQuery } from './queries';

/**
 * The enrollment profile: a signed-in GET that makes a one-time token (docs/sign-service.md). It is
 * a navigation (a download), opened with a navigation token (docs/security.md, Cross-site requests).
 */
export const PROFILE_URL = '/api/udid/profile';

/** Downloads the profile: asks for a navigation token, then opens the profile with it. */
const downloadProfile = () => openWithToken(PROFILE_URL).catch(alertFailure);

/**
 * /udid: navigating here downloads the device profile (docs/product.md, Screens), then says what to do with
 * it on the device, step by step, and changes as soon as the device's answer arrives (the live
 * device event refetches the account's devices). Signed-in only (the route sends others to sign
 * in first); the link is there for a browser that held the download back.
 */
export function UdidPage() {
  usePageTitle('Add Device');
  // Once per visit: each download makes a new one-time token (StrictMode runs effects twice).
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    void downloadProfile();
  }, []);
  const info = useQuery(infoQuery);
  // The devices there before this visit: one that appears after is the one being added.
  const [known, setKnown] = useState<Set<string> | null>(null);
  if (info.data && known === null) setKnown(new Set(info.data.device_info.map((d) => d.UDID)));
  const added = known ? info.data?.device_info.find((d) => !known.has(d.UDID)) : undefined;

  return (
    <section className="mx-auto my-4" style={{ maxWidth: '36rem' }} aria-labelledby="udid-title">
      <h1 className="fs-4" id="udid-title">
        Add Device
      </h1>
      {added ? (
        <div className="alert alert-success" role="status" data-testid="device-added">
          <strong>{added.name ?? modelName(added.Product) ?? added.Product}</strong> is on your list
          {modelName(added.Product) && added.name ? ` (${modelName(added.Product)})` : ''}. Register it on{' '}
          <Link to="/my?tab=device">My page</Link> to install apps on it.
        </div>
      ) : (
        <p role="status" className="udid-waiting">
          Downloading the device profile… This page changes as soon as your device has answered.
        </p>
      )}
      <p className="text-body-secondary">{ADD_DEVICE_NOTICE}</p>
      <ol className="udid-steps">
        <li>Allow the download when the iPhone asks, then close the message.</li>
        <li>
          Open <strong>Settings</strong>: <strong>Profile Downloaded</strong> is at the top (or under General,
          VPN &amp; Device Management).
        </li>
        <li>
          Tap <strong>Install</strong>, enter the passcode, and tap <strong>Install</strong> again.
        </li>
        <li>Come back here: your device appears on My page&apos;s Device tab.</li>
      </ol>
      <p>
        <a
          href={PROFILE_URL}
          onClick={(event) => {
            event.preventDefault();
            void downloadProfile();
          }}
        >
          Download the device profile again
        </a>{' '}
        · <Link to="/my?tab=device">Back to My page</Link>
      </p>
    </section>
  );
}

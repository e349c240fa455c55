import { useEffect, useRef } from 'react';
import { Link } from 'react-router';
import { ADD_DEVICE_NOTICE } from './messages';

/** The enrollment profile: a signed-in GET that makes a one-time token (docs/sign-service.md). */
export const PROFILE_URL = '/api/udid/profile';

/**
 * /udid: navigating here downloads the device profile (docs/product.md, Screens). Signed-in only (the route
 * sends others to sign in first); the link is there for a browser that held the download back.
 */
export function UdidPage() {
  // Once per visit: each download makes a new one-time token (StrictMode runs effects twice).
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    window.location.assign(PROFILE_URL);
  }, []);
  return (
    <section className="text-center my-5">
      <p>Downloading the device profile…</p>
      <p className="text-body-secondary">{ADD_DEVICE_NOTICE}</p>
      <p>
        <a href={PROFILE_URL}>Download the device profile again</a> · <Link to="/my">Back to My page</Link>
      </p>
    </section>
  );
}

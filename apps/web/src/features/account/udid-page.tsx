import { useEffect } from 'react';

/** /udid: navigating here downloads the device enrollment profile (spec section 2). */
export function UdidPage() {
  useEffect(() => {
    window.location.assign('/api/udid/profile');
  }, []);
  return <p className="text-center my-5">Downloading the device profile…</p>;
}

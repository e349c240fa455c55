import { Fragment, useRef, useState } from 'react';
import checkIcon from 'bootstrap-icons/icons/check2.svg?raw';
import copyIcon from 'bootstrap-icons/icons/clipboard.svg?raw';
import type { AccountInfo, Device } from '@sideport/contracts';
import { PhoneQr } from '../../components/phone-qr';
import { copyText } from '../../lib/copy-text';
import { isIosDevice } from '../../lib/device';
import { modelName } from './device-models';
import { FeatherButtons } from './feather-buttons';
import { ADD_DEVICE_NOTICE, MAC_WARNING, REGISTRATION_WAIT_NOTICE } from './messages';
import { When } from '../../lib/dates';
import { goToCheckout } from './product-tab';
import { deviceCheckout } from './queries';

const isMac = (device: Device) => /mac/i.test(device.Product);

/** The spec's button per status (section 4), coloured so the state reads at a glance, with a line on it. */
const STATES: Record<Device['status'], { label: string; variant: string; hint: string }> = {
  Add: {
    label: 'Register $19.99/year',
    variant: 'primary',
    hint: 'Not registered: installs need a registration.',
  },
  Expired: { label: 'Renew', variant: 'primary', hint: 'The registration has ended.' },
  Registered: { label: 'Registered', variant: 'success', hint: 'Installs work on it.' },
  Process: { label: 'Processing', variant: 'info', hint: 'Being registered with Apple now.' },
  Pending: { label: 'Pending', variant: 'warning', hint: 'Paid: waits its turn to be registered.' },
};

function DeviceAction({ device, index }: { device: Device; index: number }) {
  const state = STATES[device.status];
  const canPay = device.status === 'Add' || device.status === 'Expired';
  const pay = () => {
    if (isMac(device) && !window.confirm(MAC_WARNING)) return;
    void goToCheckout(() => deviceCheckout(index));
  };
  return (
    <div>
      <button
        type="button"
        className={`btn btn-sm btn-${state.variant} device-status-${device.status.toLowerCase()}`}
        disabled={!canPay}
        onClick={canPay ? pay : undefined}
      >
        {state.label}
      </button>
      {/* Held for Apple's wait: the server's sentence says why, in place of the status's line. */}
      <div className="small text-body-secondary mt-1 device-hint">{device.reason ?? state.hint}</div>
      {canPay && (
        <div className="small text-body-secondary mt-1 device-pay-note">{REGISTRATION_WAIT_NOTICE}</div>
      )}
    </div>
  );
}

/** The model code, the name people know it by ('iPhone 14 Pro') and the name it gave itself. */
function Product({ device }: { device: Device }) {
  const known = modelName(device.Product);
  return (
    <>
      <span className="font-monospace">{device.Product}</span>
      {(known || device.name) && (
        <div className="small text-body-secondary device-names">
          {[known, device.name].filter(Boolean).join(' · ')}
        </div>
      )}
    </>
  );
}

function Udid({ udid }: { udid: string }) {
  const text = useRef<HTMLElement>(null);
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    if (text.current) setCopied(await copyText(text.current, udid));
  };
  return (
    <span className="d-inline-flex align-items-start gap-1">
      <code ref={text} className="udid small text-body user-select-all">
        {/* If it must wrap, at its hyphen, never a lone character. */}
        {udid.split('-').map((part, i) => (
          <Fragment key={i}>
            {i > 0 && (
              <>
                -<wbr />
              </>
            )}
            {part}
          </Fragment>
        ))}
      </code>
      <button
        type="button"
        className="btn btn-sm btn-link p-0 lh-1 text-decoration-none copy-button"
        aria-label={`Copy UDID ${udid}`}
        title="Copy"
        onClick={() => void copy()}
      >
        <span aria-hidden="true" dangerouslySetInnerHTML={{ __html: copied ? checkIcon : copyIcon }} />
      </button>
      {copied && (
        <span className="visually-hidden" role="status">
          Copied.
        </span>
      )}
    </span>
  );
}

const until = (device: Device) =>
  device.status === 'Registered' ? <When iso={device.expired_date} day /> : '-';

/**
 * My page, Device tab (docs/product.md, Screens): the spec's table from 768 px; below it each device is a
 * card of the same columns as labelled rows, so nothing is cut off or scrolls sideways on a phone.
 */
export function DeviceTab({ info }: { info: AccountInfo | undefined }) {
  const devices = info?.device_info ?? [];
  // On a computer the profile is for the iPhone: a QR code of /udid to open there (or this Mac's own).
  const [isPhoneLinkShown, setPhoneLinkShown] = useState(false);
  // On an iPhone the profile downloads: confirm first. A computer downloads nothing: the QR code at once.
  const addDevice = () => {
    if (!isIosDevice()) return setPhoneLinkShown(true);
    if (window.confirm(ADD_DEVICE_NOTICE)) window.location.assign('/udid');
  };
  return (
    <section aria-labelledby="devices-title">
      <h2 className="fs-5" id="devices-title">
        Devices - Sign Service
      </h2>
      <div className="d-flex flex-wrap gap-2 mb-3">
        <button type="button" className="btn btn-primary" onClick={addDevice}>
          Add Device
        </button>
        <FeatherButtons />
      </div>
      {isPhoneLinkShown && (
        <>
          <PhoneQr
            url={`${window.location.origin}/udid`}
            label="add your iPhone to this account"
            instruction="Scan this QR code with the iPhone's camera, sign in there and install the profile from Settings within 10 minutes."
          />
          <p className="small">
            Adding this computer, an M1/M2 Mac? <a href="/udid">Download its profile here.</a>
          </p>
        </>
      )}
      {devices.length === 0 ? (
        <p className="text-body-secondary">Add device first.</p>
      ) : (
        <>
          <div className="d-none d-md-block">
            <table className="table align-middle">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Product</th>
                  <th scope="col">UDID</th>
                  <th scope="col">Until</th>
                  <th scope="col">Status</th>
                </tr>
              </thead>
              <tbody>
                {devices.map((device, index) => (
                  <tr key={device.UDID}>
                    <td>{index + 1}</td>
                    <td>
                      <Product device={device} />
                    </td>
                    <td>
                      <Udid udid={device.UDID} />
                    </td>
                    <td className="text-nowrap">{until(device)}</td>
                    <td>
                      <DeviceAction device={device} index={index} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <ol className="list-unstyled d-md-none d-grid gap-2 device-list" aria-label="Devices">
            {devices.map((device, index) => (
              <li key={device.UDID} className="card" data-testid="device-card">
                <dl className="card-body row mb-0 g-1 small">
                  <dt className="col-4">#</dt>
                  <dd className="col-8 mb-0">{index + 1}</dd>
                  <dt className="col-4">Product</dt>
                  <dd className="col-8 mb-0">
                    <Product device={device} />
                  </dd>
                  {/* A line of its own: beside its label the UDID's last character wrapped at 375 px. */}
                  <dt className="col-12">UDID</dt>
                  <dd className="col-12 mb-0">
                    <Udid udid={device.UDID} />
                  </dd>
                  <dt className="col-4">Until</dt>
                  <dd className="col-8 mb-0 text-nowrap">{until(device)}</dd>
                  <dt className="col-4">Status</dt>
                  <dd className="col-8 mb-0">
                    <DeviceAction device={device} index={index} />
                  </dd>
                </dl>
              </li>
            ))}
          </ol>
        </>
      )}
    </section>
  );
}

import Button from 'react-bootstrap/Button';
import Table from 'react-bootstrap/Table';
import type { AccountInfo, Device } from '@sideport/contracts';
import { formatDate, goToCheckout } from './product-tab';
import { FeatherButtons } from './feather-buttons';
import { ADD_DEVICE_NOTICE, MAC_WARNING } from './messages';

const isMac = (device: Device) => /mac/i.test(device.Product);

function DeviceAction({ device, index }: { device: Device; index: number }) {
  const pay = () => {
    if (isMac(device) && !window.confirm(MAC_WARNING)) return;
    void goToCheckout(`/api/pay/device/${index}`);
  };
  switch (device.status) {
    case 'Add':
      return (
        <Button size="sm" onClick={pay}>
          Register $19.99/year
        </Button>
      );
    case 'Expired':
      return (
        <Button size="sm" onClick={pay}>
          Renew
        </Button>
      );
    case 'Registered':
      return (
        <Button size="sm" disabled>
          Registered
        </Button>
      );
    case 'Process':
      return (
        <Button size="sm" disabled>
          Processing
        </Button>
      );
    case 'Pending':
      return (
        <Button size="sm" disabled>
          Pending
        </Button>
      );
  }
}

/** My page, Device tab (docs/product.md, Screens). */
export function DeviceTab({ info }: { info: AccountInfo | undefined }) {
  const devices = info?.device_info ?? [];
  const addDevice = () => {
    if (window.confirm(ADD_DEVICE_NOTICE)) window.location.assign('/udid');
  };
  return (
    <section>
      <h2 className="fs-5">Devices - Sign Service</h2>
      <div className="d-flex flex-wrap gap-2 mb-3">
        <Button onClick={addDevice}>Add Device</Button>
        <FeatherButtons />
      </div>
      {devices.length === 0 ? (
        <p className="text-body-secondary">Add device first.</p>
      ) : (
        <Table responsive className="align-middle">
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
                <td>{device.Product}</td>
                <td className="font-monospace small">{device.UDID}</td>
                <td className="text-nowrap">
                  {device.status === 'Registered' ? formatDate(device.expired_date) : '-'}
                </td>
                <td>
                  <DeviceAction device={device} index={index} />
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
    </section>
  );
}

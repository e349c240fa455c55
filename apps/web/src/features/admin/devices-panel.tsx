import Badge from 'react-bootstrap/Badge';
import Button from 'react-bootstrap/Button';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { AdminDevice } from '@sideport/contracts';
import { adminKeys } from '../../entries/query-keys';
import { alertFailure } from '../../lib/api';
import { useFailureAlert } from '../../lib/use-failure-alert';
import { AdminTable } from './admin-table';
import { IdentityCard } from './identity-card';
import { actOnDevice, adminDevicesQuery, formatTime } from './queries';

const DEVICE_COLUMNS = [
  { label: 'Device' },
  { label: 'User' },
  { label: 'Status' },
  { label: 'Reason' },
  { label: 'Paid', isWideOnly: true },
  { label: 'Actions', isLabelHidden: true, isWideOnly: true },
];

/** What the Status cell says: the device's status, and what the device waits for. */
function waitingFor(device: AdminDevice) {
  if (device.awaiting_confirmation) return 'Mac: waits for confirmation';
  if (device.status === 'Process') return 'being registered';
  if (device.retry_at) return `retried by itself ${formatTime(device.retry_at)}`;
  if (device.reason) return 'waits for a retry';
  return 'waits for registration';
}

/**
 * Devices waiting for registration: a paid device Pending, with Apple's reason when an attempt
 * failed (Retry tries it again now), and a Mac held in Process after payment (the Mac payment notice's 'an extra
 * process follows payment') until an admin confirms it is an M1/M2 Mac. Above them, the identity
 * that registers and signs.
 */
export function DevicesPanel() {
  const queryClient = useQueryClient();
  const devices = useQuery(adminDevicesQuery);
  useFailureAlert(devices.error);

  const act = async (device: AdminDevice, action: 'confirm' | 'retry') => {
    try {
      await actOnDevice(device.id, action);
    } catch (error) {
      alertFailure(error);
    }
    void queryClient.invalidateQueries({ queryKey: adminKeys.all });
  };

  const actionOf = (device: AdminDevice) =>
    device.awaiting_confirmation ? (
      <Button
        size="sm"
        aria-label={`Confirm ${device.product} of ${device.user}`}
        onClick={() => void act(device, 'confirm')}
      >
        Confirm
      </Button>
    ) : device.status === 'Pending' ? (
      <Button
        size="sm"
        variant="outline-primary"
        aria-label={`Retry ${device.product} of ${device.user}`}
        onClick={() => void act(device, 'retry')}
      >
        Retry
      </Button>
    ) : null;

  return (
    <section aria-label="Devices">
      <IdentityCard />
      <h2 className="fs-6 mb-2">Devices waiting for registration</h2>
      <AdminTable
        testId="devices-table"
        columns={DEVICE_COLUMNS}
        isEmpty={devices.isSuccess && devices.data.length === 0}
        emptyText="No device is waiting."
      >
        {devices.data?.map((device) => (
          <tr key={device.id} data-testid="device-row">
            <td>
              <div className="fw-semibold">
                {device.product}{' '}
                {device.platform === 'MAC_OS' && (
                  <Badge bg="secondary" className="align-text-top">
                    Mac
                  </Badge>
                )}
              </div>
              {device.name && <div className="small">{device.name}</div>}
              <div className="small text-body-secondary font-monospace text-break">{device.udid}</div>
              {/* On a phone the action sits under the device, not at the far end of a scrolled table. */}
              <div className="d-md-none mt-1">{actionOf(device)}</div>
            </td>
            <td>{device.user}</td>
            <td>
              <div>{device.status}</div>
              <div className="small text-body-secondary">{waitingFor(device)}</div>
            </td>
            <td className="small">
              {device.reason ?? '-'}
              {device.attempts > 0 && <div className="text-body-secondary">{device.attempts} attempts</div>}
            </td>
            <td className="d-none d-md-table-cell text-nowrap small">
              {device.paid_years} {device.paid_years === 1 ? 'year' : 'years'}
            </td>
            <td className="d-none d-md-table-cell text-end">{actionOf(device)}</td>
          </tr>
        ))}
      </AdminTable>
    </section>
  );
}

import ProgressBar from 'react-bootstrap/ProgressBar';
import type { DeveloperAccount } from '@sideport/contracts';

/**
 * An account's slots of each device family this membership year: used (devices registered since
 * the year began, removed ones included, and those still on it) and free. Families with none used
 * are left out, save iPhone, so an empty account still shows its room.
 */
export function AccountSlots({ account }: { account: DeveloperAccount }) {
  const shown = account.slots.filter((slot) => slot.used > 0 || slot.family === 'iPhone');
  return (
    <ul className="list-unstyled mb-0 small" data-testid="account-slots">
      {shown.map((slot) => (
        <li key={slot.family} className="mb-1" data-testid="account-slot">
          <div className="d-flex justify-content-between gap-2">
            <span>{slot.family}</span>
            <span className="text-nowrap">
              {slot.used} used · {slot.free} free
            </span>
          </div>
          <ProgressBar
            now={slot.used}
            max={slot.limit}
            variant={slot.free === 0 ? 'danger' : slot.free < slot.limit / 10 ? 'warning' : 'success'}
            style={{ height: '0.35rem' }}
            aria-label={`${slot.family}: ${slot.used} of ${slot.limit} slots used`}
          />
        </li>
      ))}
    </ul>
  );
}

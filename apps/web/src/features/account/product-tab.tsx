import { formatDay, When } from '../../lib/dates';
import Button from 'react-bootstrap/Button';
import Table from 'react-bootstrap/Table';
import type { AccountInfo } from '@sideport/contracts';
import { alertFailure } from '../../lib/api';
import { serviceCheckout } from './queries';

/** The prices of docs/product.md (Constants); the server charges through the configured provider's prices. */
export const SERVICE_OFFERS = [
  { n: 0, label: '$3.99 / month · 20 App/day' },
  { n: 1, label: '$39.99 / year · 20 App/day' },
  { n: 3, label: '$6.99 / month · 50 App/day' },
  { n: 4, label: '$69.99 / year · 50 App/day' },
  { n: 5, label: "Reset today's limit · $0.99" },
] as const;

/** A day in the viewer's zone ('Dec 23, 2027'), or '-' (lib/dates.tsx). */
export const formatDate = (iso: string | null | undefined) => (iso ? formatDay(iso) : '-');

/** Asks the server for a checkout (or the billing portal) and goes there. */
export async function goToCheckout(ask: () => Promise<{ url: string }>) {
  try {
    const { url } = await ask();
    window.location.assign(url);
  } catch (error) {
    alertFailure(error);
  }
}

/** The plan and reset buttons; the current plan's cannot be chosen again: disabled, it says 'current'. */
function OfferButtons({ isStacked = false, plan }: { isStacked?: boolean; plan: number | null }) {
  return (
    <div className={isStacked ? 'd-grid gap-2' : 'd-flex flex-wrap gap-2'}>
      {SERVICE_OFFERS.map((offer) => {
        const isCurrent = offer.n === plan;
        return (
          <Button
            key={offer.n}
            size="sm"
            className="text-nowrap"
            variant={isCurrent ? 'success' : offer.n === 5 ? 'outline-secondary' : 'outline-primary'}
            aria-current={isCurrent ? 'true' : undefined}
            disabled={isCurrent}
            onClick={() => void goToCheckout(() => serviceCheckout(offer.n))}
          >
            {offer.label}
            {isCurrent && ' · current'}
          </Button>
        );
      })}
    </div>
  );
}

/** '$39.99 / year · 20 App/day', the label of a plan. */
const planLabel = (plan: number) => SERVICE_OFFERS.find((o) => o.n === plan)?.label ?? `plan ${plan}`;

/**
 * My page, Product tab: Service / Until / Limit and the plan and reset buttons. Below 768 px the
 * buttons get a row of their own: squeezed beside three columns they broke into 4-line blocks.
 */
export function ProductTab({ info }: { info: AccountInfo | undefined }) {
  return (
    <Table responsive className="align-middle">
      <thead>
        <tr>
          <th scope="col">Service</th>
          <th scope="col">Until</th>
          <th scope="col">Limit</th>
          <th scope="col" className="d-none d-md-table-cell">
            <span className="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        <tr>
          <td>
            <div>Decrypt Premium</div>
            <div className="small text-body-secondary">Fast decrypt &amp; Downgrade</div>
            {info?.plan != null && (
              <div className="small mt-1" data-testid="current-plan">
                <span className="badge text-bg-success me-1">Current plan</span>
                {planLabel(info.plan)}, renews <When iso={info.expired_date} day />
              </div>
            )}
          </td>
          <td data-testid="premium-until" className="text-nowrap">
            {info ? info.premium ? <When iso={info.expired_date} day /> : '-' : ''}
          </td>
          <td>
            <div data-testid="daily-limit" className="text-nowrap">
              {info ? `${info.daily_limit} App/day` : ''}
            </div>
            {info && (
              <div className="small text-body-secondary" data-testid="used-today">
                {info.used_today} of {info.daily_limit} used today
              </div>
            )}
          </td>
          <td className="d-none d-md-table-cell">
            <OfferButtons plan={info?.plan ?? null} />
          </td>
        </tr>
        <tr className="d-md-none">
          <td colSpan={3}>
            <OfferButtons isStacked plan={info?.plan ?? null} />
          </td>
        </tr>
      </tbody>
    </Table>
  );
}

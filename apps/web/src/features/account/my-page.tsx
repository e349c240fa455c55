import { useEffect } from 'react';
import Alert from 'react-bootstrap/Alert';
import Button from 'react-bootstrap/Button';
import Tab from 'react-bootstrap/Tab';
import Tabs from 'react-bootstrap/Tabs';
import { useQuery } from '@tanstack/react-query';
import { useSearchParams } from 'react-router';
import { alertFailure } from '../../lib/api';
import { usePageTitle } from '../../lib/page-title';
import { goToCheckout, ProductTab } from './product-tab';
import { DeviceTab } from './device-tab';
import { billingPortal, infoQuery, updatesQuery } from './queries';
import { UpdatesTab } from './updates-tab';
import { NotificationsTab } from '../notifications/notifications-tab';

const TABS = ['product', 'device', 'updates', 'notifications'] as const;

/**
 * /my: titled with the user's id; 'Billing Portal' and the Product (default), Device (`?tab=device`)
 * Updates (`?tab=updates`, with the count of updates waiting) and Notifications (`?tab=notifications`) tabs.
 */
export function MyPage() {
  const info = useQuery(infoQuery);
  const updates = useQuery(updatesQuery);
  const waiting = updates.data?.filter((u) => u.state === 'Available' || u.state === 'Ready').length ?? 0;
  usePageTitle(info.data ? `${info.data.Id} · Mypage` : 'Mypage');
  // Checkout returns here with ?checkout=success|canceled; the state shown is fetched fresh.
  const [params, setParams] = useSearchParams();
  const checkout = params.get('checkout');
  useEffect(() => {
    if (info.error) alertFailure(info.error);
  }, [info.error]);

  return (
    <section>
      <div className="d-flex align-items-center justify-content-between mb-3">
        <h1 className="fs-3 mb-0" data-testid="my-title">
          {info.data?.Id ?? ''}
        </h1>
        <Button variant="outline-primary" onClick={() => void goToCheckout(billingPortal)}>
          Billing Portal
        </Button>
      </div>
      {checkout === 'success' && (
        <Alert variant="success" dismissible onClose={() => setParams({}, { replace: true })}>
          Payment complete.
        </Alert>
      )}
      {checkout === 'canceled' && (
        <Alert variant="secondary" dismissible onClose={() => setParams({}, { replace: true })}>
          Payment canceled.
        </Alert>
      )}
      <Tabs
        defaultActiveKey={TABS.find((tab) => tab === params.get('tab')) ?? 'product'}
        id="my-tabs"
        className="mb-3"
      >
        <Tab eventKey="product" title="Product">
          <ProductTab info={info.data} />
        </Tab>
        <Tab eventKey="device" title="Device">
          <DeviceTab info={info.data} />
        </Tab>
        <Tab
          eventKey="updates"
          title={
            <span>
              Updates
              {waiting > 0 && (
                <span className="badge rounded-pill text-bg-warning ms-1" data-testid="updates-count">
                  {waiting}
                </span>
              )}
            </span>
          }
        >
          <UpdatesTab info={info.data} />
        </Tab>
        <Tab eventKey="notifications" title="Notifications">
          <NotificationsTab />
        </Tab>
      </Tabs>
    </section>
  );
}

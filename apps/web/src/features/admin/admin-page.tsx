import Tab from 'react-bootstrap/Tab';
import Tabs from 'react-bootstrap/Tabs';
import { Navigate, useNavigate, useParams } from 'react-router';
import { usePageTitle } from '../../lib/page-title';
import { AccountsPanel } from './accounts-panel';
import { AgentsPanel } from './agents-panel';
import { AuditPanel } from './audit-panel';
import { CapabilitiesPanel } from './capabilities-panel';
import { DevicesPanel } from './devices-panel';
import { QueuePanel } from './queue-panel';
import { SetupPanel } from './setup-panel';
import { UpdatesPanel } from './updates-panel';

const TABS = ['setup', 'agents', 'queue', 'updates', 'devices', 'accounts', 'capabilities', 'audit'] as const;
type AdminTab = (typeof TABS)[number];
const isTab = (tab: string | undefined): tab is AdminTab => TABS.includes(tab as AdminTab);

/**
 * /admin (grade above 0; the server checks every call): the setup checklist it opens on, agents,
 * the queue, updates waiting and the daily cap of automatic ones, devices waiting for registration with the signing identity, the developer accounts
 * devices are registered on, what signing loses of the apps' capabilities, and the audit log. Each tab is its own address (/admin/agents ...):
 * a tab can be linked, and Back returns to the one before.
 */
export function AdminPage() {
  usePageTitle('Admin');
  const { tab } = useParams();
  const navigate = useNavigate();
  if (tab !== undefined && !isTab(tab)) return <Navigate to="/admin" replace />;
  const active: AdminTab = tab ?? 'setup';
  return (
    <section aria-labelledby="admin-title">
      <h1 id="admin-title" className="fs-4 mb-3">
        Admin
      </h1>
      <Tabs
        activeKey={active}
        onSelect={(key) =>
          key && key !== active && void navigate(key === 'setup' ? '/admin' : `/admin/${key}`)
        }
        id="admin-tabs"
        className="mb-3"
        mountOnEnter
      >
        <Tab eventKey="setup" title="Setup">
          <SetupPanel />
        </Tab>
        <Tab eventKey="agents" title="Agents">
          <AgentsPanel />
        </Tab>
        <Tab eventKey="queue" title="Queue">
          <QueuePanel />
        </Tab>
        <Tab eventKey="updates" title="Updates">
          <UpdatesPanel />
        </Tab>
        <Tab eventKey="devices" title="Devices">
          <DevicesPanel />
        </Tab>
        <Tab eventKey="accounts" title="Accounts">
          <AccountsPanel />
        </Tab>
        <Tab eventKey="capabilities" title="Capabilities">
          <CapabilitiesPanel />
        </Tab>
        <Tab eventKey="audit" title="Audit log">
          <AuditPanel />
        </Tab>
      </Tabs>
    </section>
  );
}

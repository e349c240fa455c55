import type { AppEntry, ComponentCapabilities } from '@sideport/contracts';
import { useClientStore } from '../../lib/store';
import { hasNews, modeCapabilities } from './capabilities';

const KIND_NAMES: Record<string, string> = {
  app: 'the app',
  'app-extension': 'extension',
  'watch-app': 'Apple Watch app',
  'app-clip': 'App Clip',
  framework: 'framework',
  bundle: 'bundle',
};

const STATUS_WORDS = { lost: 'Lost', changed: 'Changed', kept: 'Kept' } as const;

/** One component's part of the detail: its note, then each capability it loses or changes. */
function ComponentLines({ component, isAdmin }: { component: ComponentCapabilities; isAdmin: boolean }) {
  const news = component.capabilities.filter((c) => c.status !== 'kept');
  const kept = component.capabilities.filter((c) => c.status === 'kept');
  if (news.length === 0 && component.note === null && kept.length === 0) return null;
  const title =
    component.path === ''
      ? component.name
      : `${component.name} (${KIND_NAMES[component.kind] ?? component.kind})`;
  return (
    <li className="capability-component">
      <span className="fw-semibold">{title}</span>
      {component.note && <div className="text-danger-emphasis">{component.note}</div>}
      {news.map((c) => (
        <div key={c.id} data-status={c.status}>
          <span className={`badge me-1 ${c.status === 'lost' ? 'text-bg-warning' : 'text-bg-secondary'}`}>
            {STATUS_WORDS[c.status]}
          </span>
          {c.sentence ?? c.name}
          {isAdmin && c.operator && <div className="text-body-secondary fst-italic">{c.operator}</div>}
        </div>
      ))}
      {kept.length > 0 && (
        <div className="text-body-secondary">Kept: {kept.map((c) => c.name).join(', ')}.</div>
      )}
    </li>
  );
}

/**
 * Before a Done version's sign buttons (issue 30): a line saying what signing keeps of the app's
 * capabilities, and one tap away, per component, what is lost or changed and what the person will
 * notice; DUP's copy on a line of its own. Admins also read what the operator could do.
 */
export function CapabilityNote({ entry }: { entry: AppEntry }) {
  const isAdmin = useClientStore((s) => s.grade > 0);
  if (entry.capabilities === null)
    return (
      <div className="small text-body-secondary capability-line mb-2" data-testid="capability-note">
        Checking what signing keeps of this app...
      </div>
    );
  const report = modeCapabilities(entry, 0);
  const copy = modeCapabilities(entry, 4);
  if (!report) return null;
  const news = hasNews(report);
  return (
    <details className="small capability-note mb-2" data-testid="capability-note">
      <summary className={`capability-line ${news ? 'text-warning-emphasis' : 'text-body-secondary'}`}>
        {report.summary}
      </summary>
      <div className="mt-1">
        {entry.capabilities?.team_id && (
          <div className="text-body-secondary">
            Signed by this server's team {entry.capabilities.team_id}.
          </div>
        )}
        <ul className="ps-3 mb-1">
          {report.components.map((c) => (
            <ComponentLines key={c.path} component={c} isAdmin={isAdmin} />
          ))}
        </ul>
        {report.install_note && <div className="text-warning-emphasis">{report.install_note}</div>}
        {copy && (
          <div className="capability-dup">
            DUP installs a copy as {copy.bundle_id}: {copy.summary} {copy.install_note}
          </div>
        )}
      </div>
    </details>
  );
}

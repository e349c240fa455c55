import { Link } from 'react-router';
import type { AppEntry } from '@sideport/contracts';
import { AppIcon } from '../../components/app-icon';
import { Flag } from '../../components/flag';
import { ProgressLine } from '../../components/progress-line';
import type { LiveEntry } from '../../entries/live-entry';
import { When } from '../../lib/dates';
import { entryFacts } from '../../entries/format';
import { RatingStars } from './rating-stars';
import type { CardAction } from '../../entries/progress-button';
import { cardButtons, type ListKind } from './status-buttons';

export interface AppCardProps {
  entry: LiveEntry;
  list: ListKind;
  isAdmin: boolean;
  onAction: (action: CardAction, entry: AppEntry) => unknown;
  /** The person installed this app and the store has a newer version (My page, Updates). */
  hasUpdate?: boolean;
}

/** Where a queue entry stands: its place in line (while it waits) and its lane. */
function queuePlace(entry: AppEntry) {
  const lane = entry.premium ? 'premium lane' : 'free lane';
  if (entry.position !== null) return `No. ${entry.position} in line · ${lane}`;
  return entry.status === 'Pending' ? lane : `being worked · ${lane}`;
}

/** One app of a list (docs/product.md, Screens, App card). */
export function AppCard({ entry, list, isAdmin, onAction, hasUpdate = false }: AppCardProps) {
  const facts = entryFacts(entry);
  return (
    <article className="card h-100 app-card" data-testid="app-card" data-app-id={entry.app_id}>
      <div className="card-body d-flex gap-3">
        <AppIcon src={entry.icon} name={entry.name} size={72} />
        <div className="flex-grow-1 min-w-0">
          <h2 className="card-title fs-6 mb-1 d-flex align-items-center gap-2 min-w-0">
            <Flag country={entry.country} />
            <span className="app-name text-truncate">{entry.name}</span>
            {hasUpdate && (
              <Link
                to="/my?tab=updates"
                className="badge rounded-pill text-bg-warning text-decoration-none app-update-badge"
                title="A newer version of the app you installed is in the store"
              >
                Update
              </Link>
            )}
          </h2>
          <div className="small text-body-secondary text-truncate app-developer">{entry.developer}</div>
          <div className="small">
            <span className="app-version">{entry.version}</span>
            {' · '}
            <a
              href={entry.itunes}
              target="_blank"
              rel="noopener noreferrer"
              className="app-info-link"
              aria-label={`App Info of ${entry.name}`}
            >
              App Info
            </a>
          </div>
          {list === 'search' && <RatingStars rating={entry.raiting} count={entry.raiting_count} />}
          <div className="small text-body-secondary text-truncate app-bundle-id">{entry.bundle_id}</div>
          <div className="small app-require">Requires: iOS {entry.require} or later</div>
          {list !== 'queue' && facts.size !== null && (
            <div className="small app-size">
              {facts.size}
              {facts.isIpa && <span className="text-body-secondary"> · decrypted IPA</span>}
            </div>
          )}
          {list !== 'queue' && facts.storeNote && (
            <div className="small text-body-secondary app-store-note">{facts.storeNote}</div>
          )}
          {list === 'latest' && entry.decrypted_at && (
            <div className="small text-body-secondary app-decrypted-at">
              Decrypted <When iso={entry.decrypted_at} />
            </div>
          )}
          {list === 'queue' && <div className="small app-queue-place">{queuePlace(entry)}</div>}
          {entry.status === 'Not' && entry.reason && (
            <div className="small text-danger-emphasis app-not-reason">{entry.reason}</div>
          )}
        </div>
      </div>
      <div className="card-footer d-flex flex-wrap gap-2 justify-content-end bg-transparent">
        {cardButtons(entry, list, isAdmin).map((b) => (
          <button
            key={b.label}
            type="button"
            className={`btn btn-sm btn-${b.variant}`}
            disabled={b.disabled}
            onClick={b.action ? () => void onAction(b.action!, entry) : undefined}
          >
            {b.label}
          </button>
        ))}
        {entry.status !== 'Done' && (
          <ProgressLine progress={entry.progress} label={`Progress of ${entry.name}`} />
        )}
      </div>
    </article>
  );
}

import type { AppEntry } from '@sideport/contracts';
import Button from 'react-bootstrap/Button';
import Card from 'react-bootstrap/Card';
import { ProgressLine } from '../../components/progress-line';
import type { LiveEntry } from '../versions/queries';
import { RatingStars } from './rating-stars';
import { cardButtons, type CardAction, type ListKind } from './status-buttons';

/** Flags come from a public flag host by country code. */
export const flagUrl = (country: string) => `https://flagcdn.com/w40/${country.toLowerCase()}.png`;

export interface AppCardProps {
  entry: LiveEntry;
  list: ListKind;
  isAdmin: boolean;
  onAction: (action: CardAction, entry: AppEntry) => void;
}

/** One app of a list (docs/product.md, Screens, App card). */
export function AppCard({ entry, list, isAdmin, onAction }: AppCardProps) {
  return (
    <Card className="h-100 app-card" data-testid="app-card" data-app-id={entry.app_id}>
      <Card.Body className="d-flex gap-3">
        <img
          src={entry.icon}
          alt=""
          width={72}
          height={72}
          className="rounded-3 flex-shrink-0 app-icon"
          loading="lazy"
        />
        <div className="flex-grow-1 min-w-0">
          <Card.Title as="h2" className="fs-6 mb-1 text-truncate d-flex align-items-center gap-2">
            <img
              src={flagUrl(entry.country)}
              alt={entry.country}
              width={20}
              height={15}
              className="flag"
              loading="lazy"
            />
            <span className="app-name text-truncate">{entry.name}</span>
          </Card.Title>
          <div className="small text-body-secondary text-truncate app-developer">{entry.developer}</div>
          <div className="small">
            <span className="app-version">{entry.version}</span>
            {' · '}
            <a href={entry.itunes} target="_blank" rel="noopener noreferrer" className="app-info-link">
              App Info
            </a>
          </div>
          {list === 'search' && <RatingStars rating={entry.raiting} count={entry.raiting_count} />}
          <div className="small text-body-secondary text-truncate app-bundle-id">{entry.bundle_id}</div>
          <div className="small app-require">Requires: iOS {entry.require} or later</div>
          {list !== 'queue' && entry.size !== null && <div className="small app-size">{entry.size} MB</div>}
        </div>
      </Card.Body>
      <Card.Footer className="d-flex flex-wrap gap-2 justify-content-end bg-transparent">
        {cardButtons(entry, list, isAdmin).map((b) => (
          <Button
            key={b.label}
            size="sm"
            variant={b.variant}
            disabled={b.disabled}
            onClick={b.action ? () => onAction(b.action!, entry) : undefined}
          >
            {b.label}
          </Button>
        ))}
        {entry.status !== 'Done' && (
          <ProgressLine progress={entry.progress} label={`Progress of ${entry.name}`} />
        )}
      </Card.Footer>
    </Card>
  );
}

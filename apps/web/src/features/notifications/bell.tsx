import { useState } from 'react';
import bellIcon from 'bootstrap-icons/icons/bell.svg?raw';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { notificationKeys } from '../../entries/query-keys';
import { When } from '../../lib/dates';
import { useClientStore } from '../../lib/store';
import { markAllRead, notificationsQuery } from './queries';

/**
 * The navigation bar's bell: the unread count (live: a 'notification' event refetches it) and,
 * opened, the newest notifications, each going to the page where its action is. Opening it marks
 * them read. The same notifications a push shows, for browsers without push.
 */
export function NotificationBell() {
  const isLogin = useClientStore((s) => s.isLogin);
  const list = useQuery(notificationsQuery(isLogin));
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [isOpen, setOpen] = useState(false);
  if (!isLogin) return null;
  const unread = list.data?.unread ?? 0;
  const toggle = () => {
    setOpen(!isOpen);
    if (!isOpen && unread > 0)
      void markAllRead()
        .then(() => queryClient.invalidateQueries({ queryKey: notificationKeys.list }))
        .catch(() => {});
  };
  return (
    <div className="position-relative notification-bell me-2">
      <button
        type="button"
        className="btn btn-link nav-link px-2 position-relative"
        aria-label={unread > 0 ? `Notifications, ${unread} unread` : 'Notifications'}
        aria-expanded={isOpen}
        data-testid="notification-bell"
        onClick={toggle}
      >
        <span className="bell-icon" aria-hidden="true" dangerouslySetInnerHTML={{ __html: bellIcon }} />
        {unread > 0 && (
          <span
            className="position-absolute top-0 start-100 translate-middle badge rounded-pill text-bg-danger"
            data-testid="notification-count"
          >
            {unread > 99 ? '99+' : unread}
          </span>
        )}
      </button>
      {isOpen && (
        <div
          className="card position-absolute end-0 mt-2 shadow notification-panel"
          role="dialog"
          aria-label="Notifications"
        >
          <ul className="list-group list-group-flush">
            {(list.data?.notifications ?? []).length === 0 && (
              <li className="list-group-item small text-body-secondary">Nothing yet.</li>
            )}
            {(list.data?.notifications ?? []).map((n) => (
              <li key={n.id} className="list-group-item p-0">
                <button
                  type="button"
                  className={`btn btn-link text-start text-decoration-none w-100 p-2 notification-item${n.read_at ? '' : ' fw-semibold'}`}
                  onClick={() => {
                    setOpen(false);
                    void navigate(n.url);
                  }}
                >
                  <div className="small text-body">{n.title}</div>
                  <div className="small text-body-secondary">{n.body}</div>
                  <div className="small text-body-secondary">
                    <When iso={n.created_at} />
                  </div>
                </button>
              </li>
            ))}
          </ul>
        </div>
      )}
    </div>
  );
}

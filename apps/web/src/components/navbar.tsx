import { useState } from 'react';
import { Link, NavLink } from 'react-router';
import { usePublicConfig } from '../lib/config';
import { useClientStore } from '../lib/store';
import { useSignOut } from '../features/auth/use-sign-out';
import { NotificationBell } from '../features/notifications/bell';
import { SearchForm } from './search-form';
import { SideMenu } from './side-menu';

/**
 * The navigation bar of docs/product.md, Screens. Below 768 px (Bootstrap's md) its links collapse into a
 * side menu; the search form stays in the bar at every width, on a row of its own on a phone.
 */
export function AppNavbar() {
  const { isLogin, grade } = useClientStore();
  const signOut = useSignOut();
  const config = usePublicConfig();
  const [isMenuOpen, setMenuOpen] = useState(false);
  const close = () => setMenuOpen(false);
  const link = (to: string, label: string) => (
    <li className="nav-item">
      <NavLink to={to} className="nav-link" onClick={close}>
        {label}
      </NavLink>
    </li>
  );
  const external = (href: string | null | undefined, label: string) =>
    href && (
      <li className="nav-item">
        <a href={href} className="nav-link" target="_blank" rel="noopener noreferrer">
          {label}
        </a>
      </li>
    );

  return (
    <nav className="navbar navbar-expand-md bg-dark sticky-top mb-3" data-bs-theme="dark" aria-label="Main">
      <div className="container-fluid flex-wrap row-gap-2">
        <Link to="/latest" className="navbar-brand" aria-label="Sideport home">
          Sideport
        </Link>
        <div className="ms-auto ms-md-0 order-md-last d-flex align-items-center">
          <NotificationBell />
        </div>
        <button
          type="button"
          className="navbar-toggler"
          aria-controls="main-menu"
          aria-expanded={isMenuOpen}
          aria-label="Open menu"
          onClick={() => setMenuOpen(true)}
        >
          <span className="navbar-toggler-icon" />
        </button>
        <SideMenu id="main-menu" title="Sideport" isOpen={isMenuOpen} onClose={close}>
          <ul className="navbar-nav me-auto">
            {link('/latest', 'Latest')}
            {link('/queue', 'Queue')}
            {isLogin && link('/my', 'Mypage')}
            {isLogin && grade > 0 && link('/admin', 'Admin')}
            {isLogin && (
              <li className="nav-item">
                <button
                  type="button"
                  className="nav-link btn btn-link text-start"
                  onClick={() => {
                    close();
                    void signOut();
                  }}
                >
                  Sign Out
                </button>
              </li>
            )}
            {!isLogin && link('/sign-in', 'Sign In')}
            {!isLogin && link('/sign-up', 'Sign Up')}
            {external(config?.chatUrl, 'Chat')}
            {external(config?.channelUrl, 'Channel')}
          </ul>
        </SideMenu>
        <SearchForm onSearch={close} />
      </div>
    </nav>
  );
}

import { useEffect, useState, type FormEvent } from 'react';
import Button from 'react-bootstrap/Button';
import Container from 'react-bootstrap/Container';
import Form from 'react-bootstrap/Form';
import Nav from 'react-bootstrap/Nav';
import Navbar from 'react-bootstrap/Navbar';
import Offcanvas from 'react-bootstrap/Offcanvas';
import { Link, NavLink, useLocation, useNavigate } from 'react-router';
import { useQuery } from '@tanstack/react-query';
import { COUNTRIES, type Country } from '@sideport/contracts';
import { api } from '../lib/api';
import { useClientStore } from '../lib/store';
import { useSignOut } from '../features/auth/use-sign-out';
import { parseSearchRoute, searchPath } from './search-route';

interface PublicConfig {
  chatUrl: string | null;
  channelUrl: string | null;
}

/** The navigation bar of docs/product.md, Screens; below 768 px (Bootstrap's md) it collapses into a side menu. */
export function AppNavbar() {
  const { isLogin, grade, country, setCountry } = useClientStore();
  const location = useLocation();
  const navigate = useNavigate();
  const signOut = useSignOut();
  const config = useQuery({
    queryKey: ['config'],
    queryFn: () => api<PublicConfig>('/api/config'),
    staleTime: Infinity,
  });
  const prefill = parseSearchRoute(location.pathname);
  // On a search route its country is the current one; the store follows it so it persists.
  const shownCountry = prefill.country ?? country;
  useEffect(() => {
    if (prefill.country && prefill.country !== country) setCountry(prefill.country);
  }, [prefill.country, country, setCountry]);
  const [keyword, setKeyword] = useState(prefill.keyword ?? '');
  const [lastPrefill, setLastPrefill] = useState(prefill.keyword);
  if (prefill.keyword !== lastPrefill) {
    setLastPrefill(prefill.keyword);
    if (prefill.keyword !== undefined) setKeyword(prefill.keyword);
  }
  const [menuOpen, setMenuOpen] = useState(false);

  const search = (event: FormEvent) => {
    event.preventDefault();
    setMenuOpen(false);
    navigate(searchPath(shownCountry, keyword));
  };
  const chooseCountry = (value: Country) => {
    // The country can change at any time: an open search follows it (and the store follows the route).
    if (prefill.keyword !== undefined) navigate(`/search/${value}/${encodeURIComponent(prefill.keyword)}`);
    else setCountry(value);
  };
  const close = () => setMenuOpen(false);

  return (
    <Navbar
      expand="md"
      bg="dark"
      data-bs-theme="dark"
      className="mb-3"
      sticky="top"
      expanded={menuOpen}
      onToggle={setMenuOpen}
    >
      <Container fluid>
        <Navbar.Brand as={Link} to="/latest" aria-label="Sideport home" className="align-self-md-start">
          Sideport
        </Navbar.Brand>
        <Navbar.Toggle aria-controls="main-menu" label="Open menu" />
        <Navbar.Offcanvas id="main-menu" placement="end" aria-labelledby="main-menu-title">
          <Offcanvas.Header closeButton closeLabel="Close menu">
            <Offcanvas.Title id="main-menu-title">Sideport</Offcanvas.Title>
          </Offcanvas.Header>
          <Offcanvas.Body className="align-items-md-center flex-md-wrap row-gap-2">
            <Nav className="me-auto" onSelect={close}>
              <Nav.Link as={NavLink} to="/latest" onClick={close}>
                Latest
              </Nav.Link>
              <Nav.Link as={NavLink} to="/queue" onClick={close}>
                Queue
              </Nav.Link>
              {isLogin && (
                <Nav.Link as={NavLink} to="/my" onClick={close}>
                  Mypage
                </Nav.Link>
              )}
              {isLogin && grade > 0 && (
                <Nav.Link as={NavLink} to="/admin" onClick={close}>
                  Admin
                </Nav.Link>
              )}
              {isLogin && (
                <Nav.Link
                  as="button"
                  type="button"
                  className="btn btn-link text-start"
                  onClick={() => {
                    close();
                    void signOut();
                  }}
                >
                  Sign Out
                </Nav.Link>
              )}
              {!isLogin && (
                <Nav.Link as={NavLink} to="/sign-in" onClick={close}>
                  Sign In
                </Nav.Link>
              )}
              {!isLogin && (
                <Nav.Link as={NavLink} to="/sign-up" onClick={close}>
                  Sign Up
                </Nav.Link>
              )}
              {config.data?.chatUrl && (
                <Nav.Link href={config.data.chatUrl} target="_blank" rel="noopener noreferrer">
                  Chat
                </Nav.Link>
              )}
              {config.data?.channelUrl && (
                <Nav.Link href={config.data.channelUrl} target="_blank" rel="noopener noreferrer">
                  Channel
                </Nav.Link>
              )}
            </Nav>
            <Form className="navbar-search d-flex gap-2 mt-3 mt-md-0" role="search" onSubmit={search}>
              <Form.Select
                aria-label="Store country"
                value={shownCountry}
                onChange={(e) => chooseCountry(e.target.value as Country)}
                style={{ width: '6rem' }}
              >
                {COUNTRIES.map((c) => (
                  <option key={c} value={c}>
                    {c}
                  </option>
                ))}
              </Form.Select>
              <Form.Control
                type="search"
                placeholder="Search apps"
                aria-label="Search keyword"
                value={keyword}
                onChange={(e) => setKeyword(e.target.value)}
              />
              {/* Solid: the side menu below 768 px is white, the bar above it dark; it shows on both. */}
              <Button type="submit" variant="primary">
                Search
              </Button>
            </Form>
          </Offcanvas.Body>
        </Navbar.Offcanvas>
      </Container>
    </Navbar>
  );
}

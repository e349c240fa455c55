import { useEffect, useState, type FormEvent } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { COUNTRIES, type Country } from '@sideport/contracts';
import { useClientStore } from '../lib/store';
import { parseSearchRoute, searchPath } from './search-route';

/**
 * The bar's store-country dropdown and search box (docs/product.md, Screens): Enter or Search goes to
 * /search/{country}/{keyword}, an empty keyword to /latest; a search route prefills both.
 */
export function SearchForm({ onSearch }: { onSearch?: () => void }) {
  const { country, setCountry } = useClientStore();
  const location = useLocation();
  const navigate = useNavigate();
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

  const search = (event: FormEvent) => {
    event.preventDefault();
    onSearch?.();
    void navigate(searchPath(shownCountry, keyword));
  };
  const chooseCountry = (value: Country) => {
    // The country can change at any time: an open search follows it (and the store follows the route).
    if (prefill.keyword !== undefined)
      void navigate(`/search/${value}/${encodeURIComponent(prefill.keyword)}`);
    else setCountry(value);
  };

  return (
    <form className="navbar-search d-flex gap-2" role="search" onSubmit={search}>
      <select
        className="form-select country-select"
        aria-label="Store country"
        value={shownCountry}
        onChange={(e) => chooseCountry(e.target.value as Country)}
      >
        {COUNTRIES.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
      </select>
      <input
        type="search"
        className="form-control"
        placeholder="Search apps"
        aria-label="Search keyword"
        enterKeyHint="search"
        value={keyword}
        onChange={(e) => setKeyword(e.target.value)}
      />
      <button type="submit" className="btn btn-primary">
        Search
      </button>
    </form>
  );
}

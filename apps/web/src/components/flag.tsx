import { useState } from 'react';

/** Flags come from a public flag host by country code (docs/product.md, Screens). */
export const flagUrl = (country: string) => `https://flagcdn.com/w40/${country.toLowerCase()}.png`;

/** The country's flag, or its code in a small badge when the flag host cannot be reached. */
export function Flag({ country }: { country: string }) {
  const [hasFailed, setFailed] = useState(false);
  if (hasFailed) {
    return (
      <span className="flag-badge flex-shrink-0" role="img" aria-label={country}>
        {country}
      </span>
    );
  }
  return (
    <img
      src={flagUrl(country)}
      alt={country}
      width={20}
      height={15}
      className="flag flex-shrink-0"
      loading="lazy"
      onError={() => setFailed(true)}
    />
  );
}

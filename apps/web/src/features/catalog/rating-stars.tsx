/**
 * Glyphs of the bootstrap-icons font, bundled with the app: common system fonts have no half star
 * (U+2BEA showed as a box).
 */
const STAR_ICONS = { full: 'bi-star-fill', half: 'bi-star-half', empty: 'bi-star' } as const;

/** Rating out of 5 in half-star steps (docs/product.md, Constants), with the number of ratings beside it. */
export function RatingStars({ rating, count }: { rating: number | null; count: number | null }) {
  const halves = Math.round(Math.min(Math.max(rating ?? 0, 0), 5) * 2);
  const stars = Array.from({ length: 5 }, (_, i) => {
    const filled = halves - i * 2;
    return filled >= 2 ? 'full' : filled === 1 ? 'half' : 'empty';
  });
  const label = `Rated ${(halves / 2).toFixed(1)} out of 5 by ${(count ?? 0).toLocaleString()} people`;
  return (
    <span className="rating" role="img" aria-label={label} data-rating={halves / 2}>
      {stars.map((kind, i) => (
        <i key={i} className={`bi ${STAR_ICONS[kind]} star star-${kind}`} aria-hidden="true" />
      ))}
      <span className="rating-count ms-1 text-body-secondary">({(count ?? 0).toLocaleString()})</span>
    </span>
  );
}

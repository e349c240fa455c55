// bootstrap-icons' star drawings, inlined: a few hundred bytes instead of the icon font (134 kB)
// and its stylesheet on every first load.
import starEmpty from 'bootstrap-icons/icons/star.svg?raw';
import starFull from 'bootstrap-icons/icons/star-fill.svg?raw';
import starHalf from 'bootstrap-icons/icons/star-half.svg?raw';

const STAR_SVG = { full: starFull, half: starHalf, empty: starEmpty } as const;

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
        <span
          key={i}
          className={`star star-${kind}`}
          aria-hidden="true"
          // The package's own SVG files (fill: currentColor), bundled as text.
          dangerouslySetInnerHTML={{ __html: STAR_SVG[kind] }}
        />
      ))}
      <span className="rating-count ms-1 text-body-secondary">({(count ?? 0).toLocaleString()})</span>
    </span>
  );
}

/**
 * The one date format of the app (docs/product.md, Dates): in the viewer's time zone and language,
 * a day as 'Dec 23, 2027' and a moment as 'Dec 23, 2027, 10:00 AM'; hovering shows the absolute
 * time with its zone.
 */
const DAY = { dateStyle: 'medium' } as const;
const MOMENT = { dateStyle: 'medium', timeStyle: 'short' } as const;
const ABSOLUTE = { dateStyle: 'full', timeStyle: 'long' } as const;

export const formatDay = (iso: string) => new Date(iso).toLocaleDateString(undefined, DAY);
export const formatMoment = (iso: string) => new Date(iso).toLocaleString(undefined, MOMENT);
export const formatAbsolute = (iso: string) => new Date(iso).toLocaleString(undefined, ABSOLUTE);

/** A date or moment as shown everywhere, with the absolute time on hover; `none` when there is none. */
export function When({
  iso,
  day = false,
  none = '-',
}: {
  iso: string | null | undefined;
  day?: boolean;
  none?: string;
}) {
  if (!iso) return <>{none}</>;
  return (
    <time dateTime={iso} title={formatAbsolute(iso)}>
      {day ? formatDay(iso) : formatMoment(iso)}
    </time>
  );
}

/** ISO timestamps inside a sentence (a server's detail line), each shown as a moment. */
export function WithMoments({ text }: { text: string }) {
  const parts = text.split(/(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))/);
  return (
    <>
      {parts.map((part, i) =>
        i % 2 === 1 && !Number.isNaN(Date.parse(part)) ? <When key={i} iso={part} /> : part,
      )}
    </>
  );
}

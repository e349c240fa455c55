/**
 * What a list shows instead of cards: the empty text of docs/product.md, Screens ('No list now.', '{keyword}
 * not found.'), or the sentence of why it could not load; each with a way to ask again, never a
 * blank page.
 */
export function ListState({
  kind,
  text,
  onRetry,
  isRetrying = false,
}: {
  kind: 'empty' | 'failed';
  text: string;
  onRetry: () => void;
  isRetrying?: boolean;
}) {
  return (
    <div className="text-center my-5 list-state" data-state={kind}>
      <p className={`${kind === 'empty' ? 'empty-text' : 'failed-text'} fs-5 mb-3 text-break`} role="status">
        {text}
      </p>
      <button type="button" className="btn btn-outline-primary" onClick={onRetry} disabled={isRetrying}>
        {isRetrying ? 'Retrying…' : 'Retry'}
      </button>
    </div>
  );
}

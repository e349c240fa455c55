/**
 * A form's refusal (a broken rule, or the server's sentence), shown above its buttons. Put in the
 * page with role=alert as it appears, so a screen reader reads it out at once, as it would a dialog.
 */
export function FormAlert({ message }: { message: string | null }) {
  if (!message) return null;
  return (
    <div role="alert" className="alert alert-danger py-2 small mb-3" data-testid="form-alert">
      {message}
    </div>
  );
}

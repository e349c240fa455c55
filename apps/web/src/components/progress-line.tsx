/** The working agent's last progress (0-100) under an entry's buttons, while it is known. */
export function ProgressLine({ progress, label }: { progress: number | null | undefined; label: string }) {
  if (progress === null || progress === undefined) return null;
  return (
    <div
      className="progress mt-2 w-100"
      style={{ height: '0.35rem' }}
      role="progressbar"
      aria-label={label}
      aria-valuenow={progress}
      aria-valuemin={0}
      aria-valuemax={100}
      data-testid="progress"
    >
      <div className="progress-bar" style={{ width: `${progress}%` }} />
    </div>
  );
}

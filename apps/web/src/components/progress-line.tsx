import ProgressBar from 'react-bootstrap/ProgressBar';

/** The working agent's last progress (0-100) under an entry's buttons, while it is known. */
export function ProgressLine({ progress, label }: { progress: number | null | undefined; label: string }) {
  if (progress === null || progress === undefined) return null;
  return (
    <ProgressBar
      now={progress}
      aria-label={label}
      className="mt-2 w-100"
      style={{ height: '0.35rem' }}
      data-testid="progress"
    />
  );
}

import Button from 'react-bootstrap/Button';
import { useQueryClient } from '@tanstack/react-query';
import type { AppEntry } from '@sideport/contracts';
import { installSigned, requestSign, SIGN_BUTTON_LABELS, SIGN_MODES, signStatusOf } from './sign';

/** One button per signing mode of a Done version, by the caller's status of that mode (docs/product.md, States). */
export function SignButtons({ entry }: { entry: AppEntry }) {
  const queryClient = useQueryClient();
  return (
    <div className="d-flex flex-wrap gap-2 sign-buttons">
      {SIGN_MODES.map((mode) => {
        const status = signStatusOf(entry, mode.type);
        const onClick =
          status === 'No'
            ? () => void requestSign(queryClient, entry, mode)
            : status === 'Done'
              ? () => void installSigned(queryClient, entry, mode)
              : undefined;
        return (
          <div
            key={mode.type}
            role="group"
            aria-label={mode.name}
            className="d-flex align-items-center gap-1"
          >
            <span className="small text-body-secondary">{mode.name}</span>
            <Button
              size="sm"
              variant={status === 'Done' ? 'success' : status === 'No' ? 'outline-primary' : 'outline-info'}
              disabled={!onClick}
              onClick={onClick}
            >
              {SIGN_BUTTON_LABELS[status]}
            </Button>
          </div>
        );
      })}
    </div>
  );
}

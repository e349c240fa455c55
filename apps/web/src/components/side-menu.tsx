import { useEffect, useRef, type ReactNode } from 'react';

/**
 * Bootstrap's responsive offcanvas (`offcanvas-md`): inline from 768 px, a side panel below it,
 * opened by the bar's toggle. Written on Bootstrap's classes rather than react-bootstrap's
 * Offcanvas, whose modal machinery would weigh on every first load for a menu few open. While
 * open it is a modal dialog: focus moves in and stays in, Escape and the backdrop close it, and
 * focus returns to what opened it.
 */
export function SideMenu({
  id,
  title,
  isOpen,
  onClose,
  children,
}: {
  id: string;
  title: string;
  isOpen: boolean;
  onClose: () => void;
  children: ReactNode;
}) {
  const panel = useRef<HTMLDivElement>(null);
  const closeButton = useRef<HTMLButtonElement>(null);
  const close = useRef(onClose);
  close.current = onClose;

  useEffect(() => {
    if (!isOpen) return;
    const opener = document.activeElement as HTMLElement | null;
    closeButton.current?.focus();
    const onKey = (event: KeyboardEvent) => {
      if (event.key === 'Escape') return close.current();
      if (event.key !== 'Tab' || !panel.current) return;
      const focusable = panel.current.querySelectorAll<HTMLElement>('a[href], button:not([disabled])');
      const [first, last] = [focusable[0], focusable[focusable.length - 1]];
      if (event.shiftKey && document.activeElement === first) {
        event.preventDefault();
        last?.focus();
      } else if (!event.shiftKey && document.activeElement === last) {
        event.preventDefault();
        first?.focus();
      }
    };
    document.addEventListener('keydown', onKey);
    document.body.style.overflow = 'hidden';
    return () => {
      document.removeEventListener('keydown', onKey);
      document.body.style.overflow = '';
      opener?.focus();
    };
  }, [isOpen]);

  return (
    <>
      <div
        ref={panel}
        id={id}
        className={`offcanvas-md offcanvas-end flex-grow-1${isOpen ? ' show' : ''}`}
        tabIndex={-1}
        {...(isOpen ? { role: 'dialog', 'aria-modal': true, 'aria-labelledby': `${id}-title` } : {})}
      >
        <div className="offcanvas-header">
          <h2 className="offcanvas-title fs-5" id={`${id}-title`}>
            {title}
          </h2>
          <button
            ref={closeButton}
            type="button"
            className="btn-close"
            aria-label="Close menu"
            onClick={onClose}
          />
        </div>
        <div className="offcanvas-body align-items-md-center">{children}</div>
      </div>
      {isOpen && <div className="offcanvas-backdrop fade show d-md-none" onClick={onClose} />}
    </>
  );
}

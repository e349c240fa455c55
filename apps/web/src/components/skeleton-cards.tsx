/** Cards in the shape of app cards while a list loads (1, 2 or 3 columns, as the grid). */
export function SkeletonCards({ count = 6 }: { count?: number }) {
  return (
    <div className="row row-cols-1 row-cols-md-2 row-cols-lg-3 g-3" aria-busy="true" data-testid="skeleton">
      <span className="visually-hidden" role="status">
        Loading
      </span>
      {Array.from({ length: count }, (_, i) => (
        <div className="col" key={i} aria-hidden="true">
          <div className="card h-100">
            <div className="card-body d-flex gap-3">
              <div className="skeleton flex-shrink-0 rounded-3" style={{ width: 72, height: 72 }} />
              <div className="flex-grow-1">
                <div className="skeleton mb-2" style={{ height: '1rem', width: '70%' }} />
                <div className="skeleton mb-2" style={{ height: '0.8rem', width: '45%' }} />
                <div className="skeleton mb-2" style={{ height: '0.8rem', width: '55%' }} />
                <div className="skeleton" style={{ height: '0.8rem', width: '35%' }} />
              </div>
            </div>
            <div className="card-footer bg-transparent d-flex justify-content-end gap-2">
              <div className="skeleton" style={{ height: '1.9rem', width: '4rem' }} />
              <div className="skeleton" style={{ height: '1.9rem', width: '5.5rem' }} />
            </div>
          </div>
        </div>
      ))}
    </div>
  );
}

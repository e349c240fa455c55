import { useLayoutEffect, useRef, type ReactNode } from 'react';
import Table from 'react-bootstrap/Table';

export interface Column {
  label: string;
  /** Shown to screen readers only (an actions column). */
  isLabelHidden?: boolean;
  /** Left out below Bootstrap's md (768 px), where the table would scroll too far. */
  isWideOnly?: boolean;
}

const LABELS: Record<string, string> = {
  'agents-table': 'Agents',
  'queue-table': 'Queue',
  'audit-table': 'Audit log',
  'devices-table': 'Devices',
  'accounts-table': 'Developer accounts',
  'capabilities-table': 'Capabilities',
};

/**
 * A table of the console; with no rows it says so. Below 768 px each row reflows into a card of
 * labelled lines (the column's name before each value, as the device list does), so nothing is cut
 * off or scrolls sideways on a phone. From 768 px a table wider than the page scrolls inside a
 * region that the keyboard reaches (tabindex 0) and that is named after the table.
 */
export function AdminTable({
  testId,
  columns,
  isEmpty,
  emptyText = 'No list now.',
  children,
}: {
  testId: string;
  columns: Column[];
  isEmpty: boolean;
  emptyText?: string;
  children: ReactNode;
}) {
  const table = useRef<HTMLTableElement>(null);
  // Each cell carries its column's name, which the narrow layout shows before the value.
  useLayoutEffect(() => {
    for (const row of table.current?.tBodies[0]?.rows ?? []) {
      let column = 0;
      for (const cell of row.cells) {
        const c = columns[column];
        if (c && !c.isLabelHidden) cell.dataset.label = c.label;
        column += cell.colSpan;
      }
    }
  });
  if (isEmpty) return <p className="text-body-secondary">{emptyText}</p>;
  return (
    <div
      className="table-responsive admin-table-scroll"
      tabIndex={0}
      role="region"
      aria-label={`${LABELS[testId] ?? testId} table`}
    >
      <Table ref={table} size="sm" className="align-middle admin-table" data-testid={testId}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th
                key={c.label}
                scope="col"
                className={[c.isLabelHidden && 'position-relative', c.isWideOnly && 'd-none d-md-table-cell']
                  .filter(Boolean)
                  .join(' ')}
              >
                {c.isLabelHidden ? <span className="visually-hidden">{c.label}</span> : c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </Table>
    </div>
  );
}

import type { ReactNode } from 'react';
import Table from 'react-bootstrap/Table';

export interface Column {
  label: string;
  /** Shown to screen readers only (an actions column). */
  isLabelHidden?: boolean;
  /** Left out below Bootstrap's md (768 px), where the table would scroll too far. */
  isWideOnly?: boolean;
}

/**
 * A table of the console: it scrolls inside the page on a narrow screen; with no rows it says so.
 * A hidden label is absolutely placed, so its cell holds it: otherwise it escapes the table's scroll
 * box and widens the whole page.
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
  if (isEmpty) return <p className="text-body-secondary">{emptyText}</p>;
  return (
    <Table responsive size="sm" className="align-middle" data-testid={testId}>
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
  );
}

// A table's header row: a column header per name in columns (false leaves
// one out), and with actions a last column named for screen readers only.

export function TableHead({ columns, actions }: { columns: readonly (string | false)[]; actions?: boolean }) {
  return (
    <thead>
      <tr>
        {columns.map((c) => c !== false && (
          <th key={c} scope="col">
            {c}
          </th>
        ))}
        {actions && (
          <th scope="col">
            <span className="sr-only">actions</span>
          </th>
        )}
      </tr>
    </thead>
  );
}

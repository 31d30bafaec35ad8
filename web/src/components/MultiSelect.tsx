import { useMenuRef } from '../lib/menu';

// A filter menu built on <details>, so it opens and closes from the keyboard with
// no extra code; a click outside or Escape closes it.
export default function MultiSelect({
  label,
  options,
  selected,
  onChange,
  render,
}: {
  label: string;
  options: readonly string[];
  selected: string[];
  onChange: (values: string[]) => void;
  render?: (v: string) => string;
}) {
  const ref = useMenuRef();
  return (
    <details
      className={`menu${selected.length ? ' active' : ''}`}
      ref={ref}
      onKeyDown={(e) => {
        if (e.key === 'Escape' && ref.current?.open) {
          e.stopPropagation();
          ref.current.open = false;
          ref.current.querySelector('summary')?.focus();
        }
      }}
    >
      <summary>
        {label}
        {selected.length > 0 && <span className="count">{selected.length}</span>}
      </summary>
      <div className="menu-pop" role="group" aria-label={label}>
        {options.length === 0 && <div className="muted small">none</div>}
        {options.map((o) => (
          <label key={o} className="check">
            <input
              type="checkbox"
              checked={selected.includes(o)}
              onChange={() => onChange(selected.includes(o) ? selected.filter((x) => x !== o) : [...selected, o])}
            />
            {render ? render(o) : o}
          </label>
        ))}
        {selected.length > 0 && (
          <button type="button" className="btn small" onClick={() => onChange([])}>
            Clear
          </button>
        )}
      </div>
    </details>
  );
}

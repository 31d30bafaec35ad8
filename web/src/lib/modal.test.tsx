import { act, fireEvent, render, screen } from '@testing-library/react';
import { useRef, useState } from 'react';
import { expect, test, vi } from 'vitest';
import { useModal } from './modal';

function Dialog({ name, onClose, children }: { name: string; onClose: () => void; children?: React.ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  useModal(ref, onClose, (el) => el.querySelector('button'));
  return (
    <div role="dialog" aria-label={name} ref={ref}>
      <button type="button">{name} first</button>
      <input aria-label={`${name} field`} />
      {children}
      <button type="button">{name} last</button>
    </div>
  );
}

// An outer dialog whose button opens an inner one, as the drawer opens the sync dialog.
function Stack({ closedOuter }: { closedOuter: () => void }) {
  const [inner, setInner] = useState(false);
  return (
    <Dialog name="outer" onClose={closedOuter}>
      <button type="button" onClick={() => setInner(true)}>
        open inner
      </button>
      {inner && <Dialog name="inner" onClose={() => setInner(false)} />}
    </Dialog>
  );
}

const key = (k: string, shiftKey = false) => act(() => void window.dispatchEvent(new KeyboardEvent('keydown', { key: k, shiftKey, bubbles: true, cancelable: true })));

test('Escape closes only the topmost dialog, and focus goes back to what opened it', () => {
  const closedOuter = vi.fn();
  const below = vi.fn();
  window.addEventListener('keydown', below);
  render(<Stack closedOuter={closedOuter} />);
  expect(document.activeElement).toBe(screen.getByRole('button', { name: 'outer first' }));
  const opener = screen.getByRole('button', { name: 'open inner' });
  opener.focus();
  fireEvent.click(opener);
  expect(document.activeElement).toBe(screen.getByRole('button', { name: 'inner first' }));
  key('Escape');
  expect(screen.queryByRole('dialog', { name: 'inner' })).toBeNull();
  expect(closedOuter).not.toHaveBeenCalled();
  expect(document.activeElement).toBe(opener);
  key('Escape');
  expect(closedOuter).toHaveBeenCalledOnce();
  expect(below).not.toHaveBeenCalled();
  window.removeEventListener('keydown', below);
});

test('Tab and Shift+Tab cycle inside the topmost dialog', () => {
  render(<Stack closedOuter={() => {}} />);
  fireEvent.click(screen.getByRole('button', { name: 'open inner' }));
  const first = screen.getByRole('button', { name: 'inner first' });
  const last = screen.getByRole('button', { name: 'inner last' });
  last.focus();
  key('Tab');
  expect(document.activeElement).toBe(first);
  key('Tab', true);
  expect(document.activeElement).toBe(last);
  // From outside the dialog, Tab comes back into it.
  screen.getByRole('button', { name: 'outer last' }).focus();
  key('Tab');
  expect(document.activeElement).toBe(first);
});

test('a new onClose from the parent neither moves the focus nor reopens the dialog', () => {
  const { rerender } = render(<Dialog name="d" onClose={() => {}} />);
  const field = screen.getByRole('textbox', { name: 'd field' });
  field.focus();
  const second = vi.fn();
  rerender(<Dialog name="d" onClose={second} />);
  expect(document.activeElement).toBe(field);
  key('Escape');
  expect(second).toHaveBeenCalledOnce();
});

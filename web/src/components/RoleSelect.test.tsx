import { fireEvent, render, screen } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import { ErrorAlert, RoleSelect } from './RoleSelect';

test('the role picker offers both roles under its label and reports the one chosen', () => {
  const onChange = vi.fn();
  render(<RoleSelect label="Role of vera" value="viewer" onChange={onChange} />);
  const select = screen.getByLabelText('Role of vera') as HTMLSelectElement;
  expect([...select.options].map((o) => o.value)).toEqual(['viewer', 'admin']);
  expect(select.value).toBe('viewer');
  fireEvent.change(select, { target: { value: 'admin' } });
  expect(onChange).toHaveBeenCalledWith('admin');
});

test('the error alert shows only when there is an error', () => {
  const { rerender } = render(<ErrorAlert error="" />);
  expect(screen.queryByRole('alert')).toBeNull();
  rerender(<ErrorAlert error="the name is taken" />);
  expect(screen.getByRole('alert').textContent).toBe('the name is taken');
});

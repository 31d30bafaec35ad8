// submitted is a form's onSubmit handler that runs fn instead of letting the
// browser send the form and leave the page.

import type { FormEvent } from 'react';

export function submitted(fn: () => void) {
  return (e: FormEvent) => {
    e.preventDefault();
    fn();
  };
}

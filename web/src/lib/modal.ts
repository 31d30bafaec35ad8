import { useEffect, useRef, type RefObject } from 'react';

// useModal makes the element ref names a modal dialog for as long as the
// component is shown, as the WAI-ARIA dialog pattern has it: focus moves into
// it (to first's choice, else the element itself), Tab and Shift+Tab cycle
// inside it, Escape calls onClose, and focus goes back where it was when it
// closes. Dialogs stack (a sync dialog over the drawer, a confirmation in
// it): only the topmost one acts on a key, and the key goes no further.
//
// Not the native <dialog>: the drawer and its confirmations are laid out in
// the page, not in the top layer, and the unit tests' DOM has no showModal.

const FOCUSABLE = 'button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), a[href], [tabindex="0"]';

const open: HTMLElement[] = [];

export function useModal(ref: RefObject<HTMLElement | null>, onClose: () => void, first?: (el: HTMLElement) => HTMLElement | null) {
  // The latest ones: a parent's new callback neither moves the focus nor reopens the dialog.
  const close = useRef(onClose);
  close.current = onClose;
  const initial = useRef(first);

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const prev = document.activeElement as HTMLElement | null;
    open.push(el);
    (initial.current?.(el) ?? el).focus();
    const onKey = (e: KeyboardEvent) => {
      if (open[open.length - 1] !== el) return;
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        close.current();
      } else if (e.key === 'Tab') {
        e.stopPropagation();
        trapTab(el, e);
      }
    };
    // Capture: the dialog hears a key before anything beneath it does.
    window.addEventListener('keydown', onKey, true);
    return () => {
      window.removeEventListener('keydown', onKey, true);
      open.splice(open.indexOf(el), 1);
      prev?.focus?.();
    };
  }, [ref]);
}

function trapTab(el: HTMLElement, e: KeyboardEvent) {
  const focusable = [...el.querySelectorAll<HTMLElement>(FOCUSABLE)];
  if (focusable.length === 0) return;
  const firstOne = focusable[0];
  const last = focusable[focusable.length - 1];
  const active = document.activeElement;
  if (e.shiftKey && (active === firstOne || active === el || !el.contains(active))) {
    e.preventDefault();
    last.focus();
  } else if (!e.shiftKey && (active === last || !el.contains(active))) {
    e.preventDefault();
    firstOne.focus();
  }
}

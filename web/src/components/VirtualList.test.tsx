import { fireEvent, render, screen } from '@testing-library/react';
import { expect, test } from 'vitest';
import { VirtualList } from './VirtualList';

// happy-dom lays nothing out: give the list a fixed box whose content height
// follows the rendered spacer, as a browser's would.
function layOut(el: HTMLElement) {
  Object.defineProperty(el, 'clientHeight', { configurable: true, get: () => 100 });
  Object.defineProperty(el, 'scrollHeight', {
    configurable: true,
    get: () => parseInt((el.firstElementChild as HTMLElement).style.height, 10),
  });
}

function list(n: number) {
  return (
    <VirtualList
      items={Array.from({ length: n }, (_, i) => `line ${i}`)}
      rowHeight={() => 20}
      renderRow={(s) => s}
      rowKey={(_, i) => String(i)}
      label="Log lines"
      stickToBottom
    />
  );
}

// following renders 50 laid-out lines, then a 51st that the list follows to
// the bottom; show(n) renders n lines instead.
function following() {
  const { rerender } = render(list(50));
  const el = screen.getByRole('region', { name: 'Log lines' });
  layOut(el);
  rerender(list(51));
  return { el, show: (n: number) => rerender(list(n)) };
}

test.each([
  ['Home', (el: HTMLElement) => fireEvent.keyDown(el, { key: 'Home' })],
  ['PageUp', (el: HTMLElement) => fireEvent.keyDown(el, { key: 'PageUp' })],
  ['ArrowUp', (el: HTMLElement) => fireEvent.keyDown(el, { key: 'ArrowUp' })],
  ['a wheel turned up', (el: HTMLElement) => fireEvent.wheel(el, { deltaY: -40 })],
])('%s stops following new lines before the animated scroll has begun', (_, moveUp) => {
  const { el, show } = following();
  expect(el.scrollTop).toBe(51 * 20);
  moveUp(el);
  show(52);
  expect(el.scrollTop).toBe(51 * 20);
});

test('an animated scroll up whose first step stays near the bottom stops following', () => {
  const { el, show } = following();
  el.scrollTop = 51 * 20 - 100 - 5;
  fireEvent.scroll(el);
  show(52);
  expect(el.scrollTop).toBe(51 * 20 - 100 - 5);
});

test('a list clamped to its end by fewer lines keeps following', () => {
  const { el, show } = following();
  show(40);
  el.scrollTop = 40 * 20 - 100;
  fireEvent.scroll(el);
  show(45);
  expect(el.scrollTop).toBe(45 * 20);
});

test('a followed list keeps to the bottom as lines arrive', () => {
  const { el, show } = following();
  fireEvent.keyDown(el, { key: 'End' });
  show(60);
  expect(el.scrollTop).toBe(60 * 20);
});

// A windowed list: only the rows in (or near) the viewport are in the DOM, so a list
// of thousands of cards or log lines scrolls as fast as one of ten.

import { useEffect, useLayoutEffect, useMemo, useRef, useState, type ReactNode, type Ref } from 'react';

export interface VirtualListProps<T> {
  items: T[];
  rowHeight: (item: T) => number;
  renderRow: (item: T, index: number) => ReactNode;
  rowKey: (item: T, index: number) => string;
  className?: string;
  overscanPx?: number;
  // Keep the view at the bottom while it is there (a live log).
  stickToBottom?: boolean;
  onWidth?: (width: number) => void;
  label?: string;
  listRef?: Ref<HTMLDivElement>;
}

export function offsetsOf<T>(items: T[], rowHeight: (item: T) => number): number[] {
  const offsets = new Array<number>(items.length + 1);
  offsets[0] = 0;
  for (let i = 0; i < items.length; i++) offsets[i + 1] = offsets[i] + rowHeight(items[i]);
  return offsets;
}

// visibleRange returns [first, last) indexes of the rows overlapping [top, bottom).
export function visibleRange(offsets: number[], top: number, bottom: number): [number, number] {
  const n = offsets.length - 1;
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (offsets[mid + 1] <= top) lo = mid + 1;
    else hi = mid;
  }
  let end = lo;
  while (end < n && offsets[end] < bottom) end++;
  return [lo, end];
}

const SCROLL_UP_KEYS = new Set(['Home', 'PageUp', 'ArrowUp']);

export function VirtualList<T>(props: VirtualListProps<T>) {
  const { items, rowHeight, renderRow, rowKey, overscanPx = 600, stickToBottom = false, onWidth } = props;
  const ref = useRef<HTMLDivElement | null>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const [height, setHeight] = useState(800);
  const atBottom = useRef(true);
  const lastTop = useRef(0);
  const offsets = useMemo(() => offsetsOf(items, rowHeight), [items, rowHeight]);
  const total = offsets[offsets.length - 1];

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => {
      setHeight(el.clientHeight || 800);
      onWidth?.(el.clientWidth);
    };
    measure();
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [onWidth]);

  useLayoutEffect(() => {
    const el = ref.current;
    if (stickToBottom && el && atBottom.current) {
      el.scrollTop = el.scrollHeight;
      lastTop.current = el.scrollTop;
      setScrollTop(el.scrollTop);
    }
  }, [total, stickToBottom]);

  const [first, last] = visibleRange(offsets, Math.max(0, scrollTop - overscanPx), scrollTop + height + overscanPx);
  const rows: ReactNode[] = [];
  for (let i = first; i < last; i++) {
    rows.push(
      <div key={rowKey(items[i], i)} className="vrow" style={{ top: offsets[i], height: offsets[i + 1] - offsets[i] }}>
        {renderRow(items[i], i)}
      </div>,
    );
  }
  return (
    <div
      ref={(el) => {
        ref.current = el;
        if (typeof props.listRef === 'function') props.listRef(el);
        else if (props.listRef) (props.listRef as { current: HTMLDivElement | null }).current = el;
      }}
      className={`vlist ${props.className ?? ''}`}
      aria-label={props.label}
      // A scrolling list must be reachable by keyboard, to scroll it with the arrows.
      role={props.label ? 'region' : undefined}
      tabIndex={props.label ? 0 : undefined}
      // Chromium animates keyboard and wheel scrolling: a line arriving before
      // the first scroll event would snap the list back to the bottom, so a
      // move up stops following at once.
      onKeyDown={(e) => {
        if (SCROLL_UP_KEYS.has(e.key)) atBottom.current = false;
      }}
      onWheel={(e) => {
        if (e.deltaY < 0) atBottom.current = false;
      }}
      onScroll={(e) => {
        const el = e.currentTarget;
        const bottom = el.scrollHeight - el.clientHeight;
        // An animated scroll up starts with a few pixels: still "near the
        // bottom", yet the user is leaving it. Only the browser clamping the
        // list to its end (fewer lines) moves up and stays followed.
        const movedUp = el.scrollTop < lastTop.current && el.scrollTop < bottom - 1;
        lastTop.current = el.scrollTop;
        setScrollTop(el.scrollTop);
        atBottom.current = !movedUp && bottom - el.scrollTop < 24;
      }}
    >
      <div className="vspacer" style={{ height: total }}>
        {rows}
      </div>
    </div>
  );
}

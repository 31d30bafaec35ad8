// Server-Sent Events with a connection state. EventSource reconnects by itself after
// a dropped connection and sends Last-Event-ID, so the daemon can replay what was
// missed (docs/api.md). When the browser gives up (an HTTP error, for example the
// daemon restarting), a new EventSource is opened after a pause, and `onReopen` tells
// the caller to fetch a fresh snapshot, since that connection starts with no history.

export type ConnState = 'connecting' | 'live' | 'reconnecting';

export interface SSEOptions {
  events: string[];
  onEvent: (type: string, data: string) => void;
  onState?: (s: ConnState) => void;
  onReopen?: () => void;
  retryMs?: number;
}

export function openSSE(url: string, opts: SSEOptions): () => void {
  if (typeof EventSource === 'undefined') return () => {};
  let closed = false;
  let es: EventSource | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const connect = (reopen: boolean) => {
    const source = new EventSource(url, { withCredentials: true });
    es = source;
    opts.onState?.(reopen ? 'reconnecting' : 'connecting');
    source.onopen = () => {
      opts.onState?.('live');
      if (reopen) {
        reopen = false;
        opts.onReopen?.();
      }
    };
    source.onerror = () => {
      if (closed) return;
      opts.onState?.('reconnecting');
      if (source.readyState === EventSource.CLOSED) {
        source.close();
        timer = setTimeout(() => !closed && connect(true), opts.retryMs ?? 3000);
      }
    };
    for (const type of opts.events) {
      source.addEventListener(type, ((e: MessageEvent) => opts.onEvent(type, String(e.data))) as EventListener);
    }
  };
  connect(false);
  return () => {
    closed = true;
    clearTimeout(timer);
    es?.close();
  };
}

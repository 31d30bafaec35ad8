import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { api, errorMessage } from '../api/client';
import type { LogLine, LogLines } from '../api/types';
import { VirtualList } from '../components/VirtualList';
import { clockTime, shortRev } from '../lib/format';
import { resourceHref, revisionHref } from '../lib/links';
import { PHONE, useMediaQuery } from '../lib/media';
import { Link } from '../lib/router';
import { openSSE, type ConnState } from '../lib/sse';
import { appendLines, attrsText, filterLines, LEVELS, lineClusters, logRefs } from '../state/logs';
import { ErrorAlert } from '../components/RoleSelect';

const LINE_HEIGHT = 22;
// On a phone a line takes two rows: when, level, resource and commit, then
// the message and its attributes, each with the width of the screen.
const PHONE_LINE_HEIGHT = 42;

// LogRow is one line: the resource it is about opens its drawer, the commit
// (short, the full hash in the tooltip) its row on the Revisions page.
function LogRow({ line: l }: { line: LogLine }) {
  const { resource, key, commit, rest } = logRefs(l.attrs);
  const text = attrsText(rest);
  return (
    <div className={`log-line lv-${String(l.level).toLowerCase()}`}>
      <span className="log-time">{clockTime(l.time)}</span>
      <span className="log-level">{l.level}</span>
      {resource && (
        <Link className="log-res" href={resourceHref(key ?? resource)} title={`Open ${resource}`}>
          {resource}
        </Link>
      )}
      {commit && (
        <Link className="log-commit mono" href={revisionHref(commit)} title={commit} aria-label={`commit ${shortRev(commit)}`}>
          {shortRev(commit)}
        </Link>
      )}
      <span className="log-body">
        <span className="log-msg" title={l.msg}>
          {l.msg}
        </span>
        {text && (
          <span className="log-attrs" title={text}>
            {text}
          </span>
        )}
      </span>
    </div>
  );
}

export default function Logs() {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [paused, setPaused] = useState(false);
  const [pending, setPending] = useState(0);
  const [level, setLevel] = useState('INFO');
  const [search, setSearch] = useState('');
  const [cluster, setCluster] = useState('');
  const [conn, setConn] = useState<ConnState>('connecting');
  const [error, setError] = useState('');
  const buffer = useRef<LogLine[]>([]);
  const pausedRef = useRef(false);
  pausedRef.current = paused;

  useEffect(() => {
    let cancelled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flush = () => {
      timer = undefined;
      if (pausedRef.current) {
        setPending(buffer.current.length);
        return;
      }
      const batch = buffer.current;
      buffer.current = [];
      setLines((held) => appendLines(held, batch));
    };
    const load = () =>
      api
        .get<LogLines>('/api/v1/logs?limit=1000')
        .then((r) => !cancelled && setLines((held) => appendLines(held, r.lines ?? [])))
        .catch((err) => !cancelled && setError(errorMessage(err)));
    load();
    const close = openSSE('/api/v1/logs/stream', {
      events: ['log'],
      onEvent: (_type, data) => {
        try {
          buffer.current.push(JSON.parse(data) as LogLine);
        } catch {
          return;
        }
        if (timer === undefined) timer = setTimeout(flush, 100);
      },
      onState: (s) => !cancelled && setConn(s),
      onReopen: load,
    });
    return () => {
      cancelled = true;
      clearTimeout(timer);
      close();
    };
  }, []);

  const resume = () => {
    const batch = buffer.current;
    buffer.current = [];
    setLines((held) => appendLines(held, batch));
    setPending(0);
    setPaused(false);
  };

  const clusters = useMemo(() => lineClusters(lines), [lines]);
  const shown = useMemo(() => filterLines(lines, level, search, cluster), [lines, level, search, cluster]);
  const phone = useMediaQuery(PHONE);
  const rowHeight = useCallback(() => (phone ? PHONE_LINE_HEIGHT : LINE_HEIGHT), [phone]);

  return (
    <div className="page logs-page">
      <header className="page-head row">
        <h1>Logs</h1>
        <span className={`conn conn-${paused && conn === 'live' ? 'paused' : conn}`} role="status">
          {conn === 'live' ? (paused ? 'paused' : 'live') : conn === 'connecting' ? 'connecting…' : 'reconnecting…'}
        </span>
      </header>
      <div className="filters">
        <input
          type="search"
          className="search"
          placeholder="Search messages and attributes"
          aria-label="Search logs"
          value={search}
          onChange={(e) => setSearch(e.target.value)}
        />
        <label className="select">
          Level
          <select value={level} onChange={(e) => setLevel(e.target.value)} aria-label="Minimum level">
            {LEVELS.map((l) => (
              <option key={l} value={l}>
                {l} and above
              </option>
            ))}
          </select>
        </label>
        {(clusters.length > 1 || cluster) && (
          <label className="select">
            Cluster
            <select value={cluster} onChange={(e) => setCluster(e.target.value)}>
              <option value="">all</option>
              {clusters.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </label>
        )}
        {paused ? (
          <button type="button" className="btn primary small" onClick={resume}>
            Resume{pending > 0 ? ` (${pending} new)` : ''}
          </button>
        ) : (
          <button type="button" className="btn small" onClick={() => setPaused(true)}>
            Pause
          </button>
        )}
        <span className="spacer" />
        <span className="muted small">
          {shown.length} of {lines.length} lines
        </span>
      </div>
      <ErrorAlert error={error} />
      <VirtualList
        className="log-view"
        label="Log lines"
        items={shown}
        rowHeight={rowHeight}
        stickToBottom={!paused}
        rowKey={(l) => String(l.id)}
        renderRow={(l) => <LogRow line={l} />}
      />
    </div>
  );
}

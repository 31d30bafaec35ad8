// The live log of a resource's Proxmox task, in the drawer: read every 1.5 s while
// the action runs, once otherwise (GET …/tasklog).

import { useEffect, useRef, useState } from 'react';
import { api, errorMessage, resourcePath } from '../api/client';
import type { TaskLog as TaskLogDoc } from '../api/types';

export default function TaskLog({ kind, name, cluster = '', running, version }: { kind: string; name: string; cluster?: string; running: boolean; version: unknown }) {
  const [log, setLog] = useState<TaskLogDoc | null>(null);
  const [error, setError] = useState('');
  const pre = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const ctrl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = () =>
      api
        .get<TaskLogDoc>(resourcePath(kind, name, '/tasklog', cluster), ctrl.signal)
        .then((l) => {
          setLog(l);
          setError('');
          if (running) timer = setTimeout(read, 1500);
        })
        .catch((err) => {
          if ((err as Error).name !== 'AbortError') setError(errorMessage(err));
        });
    read();
    return () => {
      ctrl.abort();
      clearTimeout(timer);
    };
  }, [kind, name, running, version]);
  // Follow the end of the log, as `tail -f` does.
  useEffect(() => {
    if (pre.current) pre.current.scrollTop = pre.current.scrollHeight;
  }, [log]);
  if (error) return <p className="muted small">Task log: {error}</p>;
  if (!log || !log.task) return null;
  return (
    <details className="tasklog" open={running || undefined}>
      <summary>
        {running ? 'Task log (live)' : 'Last task log'} <span className="muted small mono">{log.task.split(':').slice(5, 7).join(' ')}</span>
      </summary>
      <pre ref={pre} className="yaml tasklog-lines" tabIndex={0} aria-label="Task log lines">
        {(log.lines ?? []).join('\n')}
      </pre>
    </details>
  );
}

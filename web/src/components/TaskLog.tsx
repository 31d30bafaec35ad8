// The live log of a resource's Proxmox task, in the drawer: read every 1.5 s while
// the action runs, once otherwise (GET …/tasklog).

import { useEffect, useRef } from 'react';
import { resourcePath } from '../api/client';
import { useApiGet } from '../api/useApi';
import type { TaskLog as TaskLogDoc } from '../api/types';

export default function TaskLog({ kind, name, cluster = '', running, version }: { kind: string; name: string; cluster?: string; running: boolean; version: unknown }) {
  const { data: log, error } = useApiGet<TaskLogDoc>(resourcePath(kind, name, '/tasklog', cluster), { deps: [version], every: running ? 1500 : 0 });
  const pre = useRef<HTMLPreElement>(null);
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

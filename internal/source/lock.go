package source

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// dirLocks serialises work on one cache directory within the process; a
// file lock (where the platform has one) does the same across processes,
// e.g. `proxmops plan` run next to the daemon with the same cache.
var dirLocks sync.Map // path -> chan struct{} (a mutex that honours ctx)

// lockDir takes the lock of dir, waiting until ctx is done.
func lockDir(ctx context.Context, dir string) (unlock func(), err error) {
	v, _ := dirLocks.LoadOrStore(dir, make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		<-ch
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		<-ch
		return nil, err
	}
	for {
		ok, err := tryFlock(f)
		if err != nil {
			f.Close()
			<-ch
			return nil, err
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			f.Close()
			<-ch
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return func() {
		unflock(f)
		f.Close()
		<-ch
	}, nil
}

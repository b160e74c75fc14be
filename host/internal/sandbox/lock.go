package sandbox

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// lockTable serializes the writers of each file within one host: every
// call's host functions share the Sandbox, so the table lives here. An
// entry exists only while someone holds or waits for its lock, so the
// table is as large as the number of files being written right now, not
// the number ever written.
type lockTable struct {
	mu sync.Mutex
	m  map[string]*pathLock
}

type pathLock struct {
	token chan struct{} // holds one value while the lock is held
	refs  int           // holders and waiters; the entry goes at 0
}

// Lock takes the write lock of every path (canonical absolute paths, as in
// Path.Abs) and returns the function that releases them. A caller holds
// the locks from its freshness check to its last rename, so no other call
// of this host can change a file between the check and the write.
//
// Paths are locked in sorted order, so two callers locking overlapping
// sets in any order cannot deadlock. Waiting stops when ctx is done: the
// error wraps ctx.Err() and no lock is held. Locks do not reach other
// processes.
func (s *Sandbox) Lock(ctx context.Context, paths ...string) (unlock func(), err error) {
	keys := make([]string, len(paths))
	for i, p := range paths {
		keys[i] = s.normalize(p)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	held := make([]string, 0, len(keys))
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			s.locks.release(held[i])
		}
	}
	for _, k := range keys {
		if err := s.locks.acquire(ctx, k); err != nil {
			release()
			return nil, fmt.Errorf("waiting for another call that is writing %s: %w", k, err)
		}
		held = append(held, k)
	}
	var once sync.Once
	return func() { once.Do(release) }, nil
}

func (t *lockTable) acquire(ctx context.Context, key string) error {
	t.mu.Lock()
	if t.m == nil {
		t.m = make(map[string]*pathLock)
	}
	l := t.m[key]
	if l == nil {
		l = &pathLock{token: make(chan struct{}, 1)}
		t.m[key] = l
	}
	l.refs++
	t.mu.Unlock()
	select {
	case l.token <- struct{}{}:
		return nil
	case <-ctx.Done():
		t.unref(key, l)
		return ctx.Err()
	}
}

func (t *lockTable) release(key string) {
	t.mu.Lock()
	l := t.m[key]
	t.mu.Unlock()
	<-l.token
	t.unref(key, l)
}

func (t *lockTable) unref(key string, l *pathLock) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(t.m, key)
	}
}

// size is the number of entries, for tests of the table's growth.
func (t *lockTable) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// lockTable serializes the writers of each file within one process: every
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
// can change a file between the check and the write.
//
// With a lock directory (Config.LockDir), each lock reaches the other
// processes that share it too (toolhost call, serve, batch on one state
// directory share the conversations' read caches, so they must share the
// locks that make a check and its write one step): after the lock of
// this process, Lock takes an advisory lock on a file named for the path
// in that directory, never in the user's tree.
//
// Paths are locked in sorted order, each first in this process and then
// across processes, so two callers locking overlapping sets in any order
// cannot deadlock. Waiting stops when ctx is done: the error is a
// *LockError naming the path, wraps ctx.Err(), and no lock is held.
func (s *Sandbox) Lock(ctx context.Context, paths ...string) (unlock func(), err error) {
	keys := make([]string, len(paths))
	for i, p := range paths {
		keys[i] = s.normalize(p)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	type heldLock struct {
		key  string
		file *os.File // nil: this process only
	}
	held := make([]heldLock, 0, len(keys))
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			if held[i].file != nil {
				unlockFile(held[i].file)
			}
			s.locks.release(held[i].key)
		}
	}
	for _, k := range keys {
		if err := s.locks.acquire(ctx, k); err != nil {
			release()
			return nil, &LockError{Path: k, Err: err}
		}
		f, err := s.lockAcross(ctx, k)
		if err != nil {
			s.locks.release(k)
			release()
			return nil, &LockError{Path: k, Err: err}
		}
		held = append(held, heldLock{k, f})
	}
	var once sync.Once
	return func() { once.Do(release) }, nil
}

// LockError is Lock's failure: the lock of Path could not be taken,
// because ctx ended while another call or process held it, or because
// its lock file could not be opened.
type LockError struct {
	Path string // canonical absolute path
	Err  error
}

func (e *LockError) Error() string {
	return "waiting for another call or toolhost process that is writing " + e.Path + ": " + e.Err.Error()
}

func (e *LockError) Unwrap() error { return e.Err }

// How often a caller waiting for another process's lock tries again: a
// flock cannot be interrupted by a context, so the wait polls, starting
// fast (a write holds its lock for milliseconds) and backing off.
const (
	lockPollFirst = 500 * time.Microsecond
	lockPollMax   = 20 * time.Millisecond
)

// lockAcross takes the lock of key that other processes sharing the lock
// directory see; nil without one. The file is removed by its
// holder before the lock is released (unlockFile), so the directory
// holds only the files of paths being written; a lock won on a file that
// was removed meanwhile guards nothing, and is taken again on the new one.
func (s *Sandbox) lockAcross(ctx context.Context, key string) (*os.File, error) {
	if s.lockDir == "" {
		return nil, nil
	}
	sum := sha256.Sum256([]byte(key))
	name := filepath.Join(s.lockDir, hex.EncodeToString(sum[:16])+".lock")
	delay := lockPollFirst
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock file %s: %w", name, err)
		}
		for {
			err = lockFile(f, false)
			if !errors.Is(err, errLocked) {
				break
			}
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				f.Close()
				return nil, ctx.Err()
			case <-t.C:
			}
			delay = min(2*delay, lockPollMax)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock file %s: %w", name, err)
		}
		if sameFile(f, name) {
			return f, nil
		}
		f.Close()
	}
}

// sameFile reports whether name still names the open file f.
func sameFile(f *os.File, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(name)
	return err == nil && os.SameFile(a, b)
}

// unlockFile removes a lock file its holder is done with, then releases
// the lock by closing it.
func unlockFile(f *os.File) {
	os.Remove(f.Name())
	f.Close()
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

package sandbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
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
// With a lock directory (Config.LockDir), the locks reach the other
// processes that share it too (toolhost call, serve, batch on one state
// directory share the conversations' read caches, so they must share the
// locks that make a check and its write one step): after the locks of
// this process, Lock takes an advisory lock on each stripe its paths
// fall in, one of lockStripes files in that directory (never in the
// user's tree). Striping bounds the descriptors a lock holds however
// many paths it covers (a patch of thousands of files, a tree's every
// entry), at the price of a writer now and then waiting for another
// process's write of an unrelated file that shares its stripe.
//
// Paths are locked in sorted order in this process, then stripes in
// ascending order, so two callers locking overlapping sets in any order
// cannot deadlock: one holding a stripe waits only for higher stripes,
// never for a lock of this process. The callers of one process share
// its hold of a stripe (stripeTable), so a caller may lock more paths
// while it holds some (a tree's entries after the tree); should that
// second lock need a lower stripe another process holds while it waits
// for one of this caller's, both wait until a deadline, and one call
// fails with a Timeout naming its path, changing nothing. Waiting stops when ctx is done: the
// error is a *LockError naming a path, wraps ctx.Err(), and no lock is
// held.
func (s *Sandbox) Lock(ctx context.Context, paths ...string) (unlock func(), err error) {
	keys := make([]string, len(paths))
	for i, p := range paths {
		keys[i] = s.normalize(p)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var held []string
	var stripes []int
	release := func() {
		for i := len(stripes) - 1; i >= 0; i-- {
			s.stripes.release(stripes[i])
		}
		for i := len(held) - 1; i >= 0; i-- {
			s.locks.release(held[i])
		}
	}
	for _, k := range keys {
		if err := s.locks.acquire(ctx, k); err != nil {
			release()
			return nil, &LockError{Path: k, Err: err}
		}
		held = append(held, k)
	}
	if s.lockDir != "" {
		// The first path of each stripe names it in an error.
		first := make(map[int]string)
		for _, k := range keys {
			if _, ok := first[stripeOf(k)]; !ok {
				first[stripeOf(k)] = k
			}
		}
		for _, n := range slices.Sorted(maps.Keys(first)) {
			if err := s.stripes.acquire(ctx, s.lockDir, n); err != nil {
				release()
				return nil, &LockError{Path: first[n], Err: err}
			}
			stripes = append(stripes, n)
		}
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

// lockStripes is how many lock files the processes sharing a lock
// directory divide the paths among: few enough that a lock of every
// path holds few descriptors, enough that two unrelated writes seldom
// wait for each other.
const lockStripes = 32

// stripeOf is the stripe a canonical path falls in.
func stripeOf(key string) int {
	sum := sha256.Sum256([]byte(key))
	return int(sum[0]) % lockStripes
}

// How often a caller waiting for another process's lock tries again: a
// flock cannot be interrupted by a context, so the wait polls, starting
// fast (a write holds its lock for milliseconds) and backing off.
const (
	lockPollFirst = 500 * time.Microsecond
	lockPollMax   = 20 * time.Millisecond
)

// stripeTable is one process's holds of the lock directory's stripes.
// A stripe excludes other processes only: within the process, the
// writers of one path are serialized by lockTable, so every caller here
// shares one flock of a stripe, counted, and the first to need it takes
// it. Sharing also lets a caller that holds a stripe lock more paths in
// it (a commit locks a tree's entries after the tree), which a second
// flock of the same file would wait on forever.
type stripeTable struct {
	mu   sync.Mutex
	held [lockStripes]struct {
		f    *os.File
		refs int
	}
	// gate lets one caller at a time of this process wait for a
	// stripe another process holds.
	gate [lockStripes]chan struct{}
	once sync.Once
}

// acquire takes stripe n of dir for the caller, waiting while another
// process holds it until ctx is done.
func (t *stripeTable) acquire(ctx context.Context, dir string, n int) error {
	t.once.Do(func() {
		for i := range t.gate {
			t.gate[i] = make(chan struct{}, 1)
		}
	})
	if t.share(n) {
		return nil
	}
	select {
	case t.gate[n] <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-t.gate[n] }()
	if t.share(n) {
		return nil
	}
	f, err := lockStripe(ctx, dir, n)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.held[n].f, t.held[n].refs = f, 1
	t.mu.Unlock()
	return nil
}

// share counts the caller in on stripe n if this process holds it.
func (t *stripeTable) share(n int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[n].refs == 0 {
		return false
	}
	t.held[n].refs++
	return true
}

// release lets go of the caller's hold of stripe n; the last one here
// releases the flock by closing the file.
func (t *stripeTable) release(n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held[n].refs--; t.held[n].refs == 0 {
		t.held[n].f.Close()
		t.held[n].f = nil
	}
}

// lockStripe takes the flock of stripe n in dir. The file stays in the
// directory: the set is fixed and small, so nothing needs removing, and
// no waiter can win a lock on a file removed under it.
func lockStripe(ctx context.Context, dir string, n int) (*os.File, error) {
	name := filepath.Join(dir, fmt.Sprintf("stripe-%02d.lock", n))
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file %s: %w", name, err)
	}
	delay := lockPollFirst
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
	return f, nil
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

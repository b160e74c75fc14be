package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Writers of one file are serialized; sets of files are
// locked in a fixed order, so overlapping sets taken in opposite orders
// never deadlock; the table forgets files nobody is writing.
func TestLock_SerializesAndNeverDeadlocks(t *testing.T) {
	f := newFixture(t, Config{})
	a, b, c := filepath.Join(f.root, "a"), filepath.Join(f.root, "b"), filepath.Join(f.root, "c")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	var mu sync.Mutex
	inside := map[string]int{} // holders of each path right now
	var wg sync.WaitGroup
	orders := [][]string{{a, b, c}, {c, b, a}, {b, a}, {c, a}, {a, a, b}}
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				paths := orders[(w+i)%len(orders)]
				unlock, err := f.s.Lock(ctx, paths...)
				if err != nil {
					t.Errorf("Lock(%v): %v (a deadlock runs into the test's deadline)", paths, err)
					return
				}
				held := slices.Compact(slices.Sorted(slices.Values(paths)))
				mu.Lock()
				for _, p := range held {
					if inside[p]++; inside[p] > 1 {
						t.Errorf("%s held by two callers at once", p)
					}
				}
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
				for _, p := range held {
					inside[p]--
				}
				mu.Unlock()
				unlock()
				unlock() // releasing twice is harmless
			}
		})
	}
	wg.Wait()
	if n := f.s.locks.size(); n != 0 {
		t.Errorf("lock table holds %d entries after every lock was released, want 0", n)
	}
}

// A caller waiting for a lock gives up when its context ends, holding
// nothing, and leaves no entry behind.
func TestLock_WaitEndsWithContext(t *testing.T) {
	f := newFixture(t, Config{})
	a, b := filepath.Join(f.root, "a"), filepath.Join(f.root, "b")
	unlock, err := f.s.Lock(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := f.s.Lock(ctx, a, b); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held path = %v, want the context's error", err)
	}
	// a was taken first and must have been released.
	ua, err := f.s.Lock(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	ua()
	unlock()
	if n := f.s.locks.size(); n != 0 {
		t.Errorf("lock table holds %d entries, want 0", n)
	}
}

// Two sandboxes sharing a lock directory, as two toolhost processes
// sharing a state directory do, exclude each other: the second waits
// while the first holds a path, gives up at its context's deadline with
// an error naming the path, and takes the lock once it is released. The
// lock directory holds only the stripes' files, and the user's tree none.
func TestLock_ReachesOtherSandboxesOfTheStateDirectory(t *testing.T) {
	locks := t.TempDir()
	f := newFixture(t, Config{LockDir: locks})
	other, err := New(Config{Roots: []string{f.root}, LockDir: locks})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a, b := filepath.Join(f.root, "a.txt"), filepath.Join(f.root, "b.txt")
	for i := 0; stripeOf(a) == stripeOf(b); i++ {
		// Two paths of one stripe wait for each other across processes,
		// and the error names the first: this test needs two stripes.
		b = filepath.Join(f.root, fmt.Sprintf("b%d.txt", i))
	}
	unlock, err := f.s.Lock(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = other.Lock(ctx, a, b)
	le, ok := errors.AsType[*LockError](err)
	if !ok || le.Path != b || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a path another sandbox holds = %v, want a *LockError naming %s that wraps the deadline", err, b)
	}
	// a was taken by other and released when it gave up.
	ua, err := f.s.Lock(t.Context(), a)
	if err != nil {
		t.Fatal(err)
	}
	ua()
	got := make(chan error, 1)
	go func() {
		u, err := other.Lock(t.Context(), a, b)
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the other sandbox took b while it was held (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other sandbox never took b after it was released")
	}
	left, _ := os.ReadDir(locks)
	for _, e := range left {
		if !strings.HasPrefix(e.Name(), "stripe-") {
			t.Errorf("lock directory holds %s, not a stripe's file", e.Name())
		}
	}
	if len(left) > lockStripes {
		t.Errorf("%d lock files, more than the %d stripes", len(left), lockStripes)
	}
	filepath.WalkDir(f.root, func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, ".lock") {
			t.Errorf("lock file in the user's tree: %s", p)
		}
		return nil
	})
}

// Many sandboxes on one lock directory, taking overlapping sets in
// every order, never hold one path twice and never deadlock.
func TestLock_AcrossSandboxesSerializes(t *testing.T) {
	locks := t.TempDir()
	f := newFixture(t, Config{LockDir: locks})
	var boxes []*Sandbox
	for range 4 {
		s, err := New(Config{Roots: []string{f.root}, LockDir: locks})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		boxes = append(boxes, s)
	}
	a, b, c := filepath.Join(f.root, "a"), filepath.Join(f.root, "b"), filepath.Join(f.root, "c")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	inside := map[string]int{}
	var wg sync.WaitGroup
	orders := [][]string{{a, b, c}, {c, b, a}, {b, a}, {c, a}}
	for w, s := range boxes {
		wg.Go(func() {
			for i := range 100 {
				paths := orders[(w+i)%len(orders)]
				unlock, err := s.Lock(ctx, paths...)
				if err != nil {
					t.Errorf("Lock(%v): %v", paths, err)
					return
				}
				mu.Lock()
				for _, p := range paths {
					if inside[p]++; inside[p] > 1 {
						t.Errorf("%s held by two sandboxes at once", p)
					}
				}
				mu.Unlock()
				runtime.Gosched()
				mu.Lock()
				for _, p := range paths {
					inside[p]--
				}
				mu.Unlock()
				unlock()
			}
		})
	}
	wg.Wait()
}

// A caller holding paths may lock more paths of the same stripe (a
// commit locks a tree's entries after the tree): the callers of one
// process share its hold of a stripe, where a second flock of the file
// would wait for the first forever. Another sandbox on the lock
// directory, as another process, still waits for the stripe.
func TestLock_NestedLockOfOneStripe(t *testing.T) {
	locks := t.TempDir()
	f := newFixture(t, Config{LockDir: locks})
	other, err := New(Config{Roots: []string{f.root}, LockDir: locks})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	top := filepath.Join(f.root, "tree")
	entry := filepath.Join(top, "e0")
	for i := 1; stripeOf(entry) != stripeOf(top); i++ {
		entry = filepath.Join(top, fmt.Sprintf("e%d", i))
	}
	outer, err := f.s.Lock(t.Context(), top)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	inner, err := f.s.Lock(ctx, entry)
	if err != nil {
		t.Fatalf("lock of %s while holding %s (one stripe): %v", entry, top, err)
	}
	waitBriefly := func() error {
		short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		u, err := other.Lock(short, entry)
		if err == nil {
			u()
		}
		return err
	}
	if err := waitBriefly(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("another sandbox's lock of %s while this one holds its stripe = %v, want the deadline", entry, err)
	}
	inner()
	if err := waitBriefly(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("another sandbox's lock of %s while the outer lock holds its stripe = %v, want the deadline", entry, err)
	}
	outer()
	u, err := other.Lock(t.Context(), entry)
	if err != nil {
		t.Fatalf("another sandbox could not take the stripe once it was released: %v", err)
	}
	u()
}

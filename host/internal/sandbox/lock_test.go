package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"slices"
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

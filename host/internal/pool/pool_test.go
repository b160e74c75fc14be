package pool

import (
	"errors"
	"slices"
	"sync"
	"testing"
)

func TestPool(t *testing.T) {
	tests := []struct {
		name string
		max  int
		put  []int
		// kept is what each Put reported, gets what Gets return until
		// the pool is empty (the last put first).
		kept []bool
		gets []int
	}{
		{"empty", 2, nil, nil, nil},
		{"last in, first out", 3, []int{1, 2, 3}, []bool{true, true, true}, []int{3, 2, 1}},
		{"full", 2, []int{1, 2, 3}, []bool{true, true, false}, []int{2, 1}},
		{"keeps nothing", 0, []int{1}, []bool{false}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := New[int](tt.max)
			var kept []bool
			for _, v := range tt.put {
				kept = append(kept, p.Put(v))
			}
			if !slices.Equal(kept, tt.kept) {
				t.Errorf("Put kept %v, want %v", kept, tt.kept)
			}
			if room := p.Room(); room != tt.max-len(tt.gets) {
				t.Errorf("Room = %d, want %d", room, tt.max-len(tt.gets))
			}
			var gets []int
			for {
				v, ok, err := p.Get()
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
				gets = append(gets, v)
			}
			if !slices.Equal(gets, tt.gets) {
				t.Errorf("Get returned %v, want %v", gets, tt.gets)
			}
		})
	}
}

func TestPoolClose(t *testing.T) {
	p := New[string](4)
	p.Put("a")
	p.Put("b")
	if idle, first := p.Close(); !slices.Equal(idle, []string{"a", "b"}) || !first {
		t.Errorf("Close returned %v, %v; want [a b], true", idle, first)
	}
	if _, ok, err := p.Get(); ok || !errors.Is(err, ErrClosed) {
		t.Errorf("Get after Close = %v, %v; want ErrClosed", ok, err)
	}
	if p.Put("c") {
		t.Error("Put after Close kept its value: nothing would close it")
	}
	if idle, first := p.Close(); len(idle) != 0 || first || p.Room() != 0 || p.Len() != 0 {
		t.Errorf("a second Close returned %v, %v; Room %d, Len %d", idle, first, p.Room(), p.Len())
	}
}

// TestPoolConcurrent has many goroutines take and return values: under
// -race, and no value is lost or handed out twice.
func TestPoolConcurrent(t *testing.T) {
	const n = 8
	p := New[int](n)
	for i := range n {
		p.Put(i)
	}
	var mu sync.Mutex
	inUse := map[int]bool{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 200 {
				v, ok, err := p.Get()
				if err != nil || !ok {
					continue
				}
				mu.Lock()
				if inUse[v] {
					t.Errorf("value %d handed out twice", v)
				}
				inUse[v] = true
				mu.Unlock()
				mu.Lock()
				delete(inUse, v)
				mu.Unlock()
				if !p.Put(v) {
					t.Errorf("value %d not taken back by a pool it came from", v)
				}
			}
		})
	}
	wg.Wait()
	if p.Len() != n {
		t.Errorf("Len = %d after the goroutines, want %d", p.Len(), n)
	}
}

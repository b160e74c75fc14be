package sandbox

import (
	"bytes"
	"context"
	"testing"
)

// The cost of a write's lock, alone and beside the write of a 4 KB file
// it guards, with and without a lock directory (where the locks that reach
// other processes live).
func BenchmarkLock(b *testing.B) {
	data := bytes.Repeat([]byte("z"), 4096)
	for _, c := range []struct {
		name string
		cfg  func(b *testing.B) Config
	}{
		{"in-process", func(*testing.B) Config { return Config{} }},
		{"state-dir", func(b *testing.B) Config { return Config{LockDir: b.TempDir()} }},
	} {
		b.Run(c.name+"/lock", func(b *testing.B) {
			f := newFixture(b, c.cfg(b))
			p, err := f.s.Resolve("out.txt")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				unlock, err := f.s.Lock(context.Background(), p.Abs)
				if err != nil {
					b.Fatal(err)
				}
				unlock()
			}
		})
		b.Run(c.name+"/write4KB", func(b *testing.B) {
			f := newFixture(b, c.cfg(b))
			p, err := f.s.Resolve("out.txt")
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				unlock, err := f.s.Lock(context.Background(), p.Abs)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.s.WriteFileAtomic(p, data, true); err != nil {
					b.Fatal(err)
				}
				unlock()
			}
		})
	}
}

package jobs

import (
	"path/filepath"
	"testing"
)

// BenchmarkKeep is what keeping costs a foreground command: an output
// of 4 KiB kept, in a directory already holding 1000.
func BenchmarkKeep(b *testing.B) {
	m, err := New(Options{Dir: filepath.Join(b.TempDir(), "outputs")})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	chunk := make([]byte, 4096)
	keepOne := func() {
		k, err := m.Keep("c", "call", "make")
		if err != nil {
			b.Fatal(err)
		}
		k.Write(chunk)
		k.Close()
	}
	for range 1000 {
		keepOne()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		keepOne()
	}
}

// BenchmarkRing is a job's output going into its ring, in 32 KiB reads
// as proc delivers them.
func BenchmarkRing(b *testing.B) {
	r := ring{size: DefaultRingBytes}
	chunk := make([]byte, 32<<10)
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		r.write(chunk)
	}
}

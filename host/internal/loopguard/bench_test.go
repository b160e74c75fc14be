package loopguard

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkInstrumentGoModule needs the plugins make build produces.
func BenchmarkInstrumentGoModule(b *testing.B) {
	wasm, err := os.ReadFile(filepath.Join("..", "..", "..", "bin", "plugins", "read_file.wasm"))
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(wasm)))
	for b.Loop() {
		if _, err := Instrument(wasm); err != nil {
			b.Fatal(err)
		}
	}
}

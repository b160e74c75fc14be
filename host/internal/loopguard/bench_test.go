package loopguard

import (
	"os"
	"testing"
)

func BenchmarkInstrumentGoModule(b *testing.B) {
	wasm, err := os.ReadFile("/work/main/bin/plugins/read_file.wasm")
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

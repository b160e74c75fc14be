package loopguard

import (
	"context"
	"errors"
	"testing"

	"github.com/tetratelabs/wazero"
)

// FuzzInstrument checks that Instrument never panics or hangs, and that a
// module wazero accepts stays acceptable once instrumented.
func FuzzInstrument(f *testing.F) {
	for _, tc := range codeCases() {
		if tc.features == 0 {
			f.Add(funcModule(tc.locals, tc.code, tc.tags))
		}
	}
	for _, tc := range sectionCases() {
		f.Add(tc.in)
	}
	for _, tc := range rejectCases() {
		f.Add(tc.in)
	}
	f.Add(loopModule())
	ctx := context.Background()
	// The interpreter validates exactly as the compiler does, and compiles
	// faster.
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Instrument(in)
		if err != nil || mayOverallocate(in) {
			return
		}
		m, err := r.CompileModule(ctx, in)
		if err != nil {
			return // invalid input; any output is acceptable
		}
		m.Close(ctx)
		m, err = r.CompileModule(ctx, out)
		if err != nil {
			t.Fatalf("valid module became invalid: %v", err)
		}
		m.Close(ctx)
		if _, err := Instrument(out); !errors.Is(err, ErrFlagExported) {
			t.Fatalf("instrumenting the output again: err = %v, want ErrFlagExported", err)
		}
	})
}

// mayOverallocate reports whether in could hold a LEB128 of 2^21 or more:
// three bytes in a row with the continuation bit set. wazero's decoder
// sizes slices by the counts it reads before it finds out that the input
// is too short to hold them (a data section claiming 100 million segments
// allocates 5 GB), which kills the fuzzing process. Such inputs are only
// checked for not making Instrument panic or hang.
func mayOverallocate(in []byte) bool {
	run := 0
	for _, c := range in {
		if c < 0x80 {
			run = 0
		} else if run++; run == 3 {
			return true
		}
	}
	return false
}

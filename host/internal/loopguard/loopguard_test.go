package loopguard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

type codeCase struct {
	name         string
	locals, code []byte
	want         []byte // code with the guard inserted
	tags         bool   // the module needs a tag (exception handling)
	features     api.CoreFeatures
}

// codeCases are function bodies whose immediates are full of 0x03 bytes,
// the loop opcode, so that only a walk that skips every immediate exactly
// inserts the guard where want says.
func codeCases() []codeCase {
	g := guard00
	v128 := cat(bs(0xfd, 0x0c), repeat(0x03, 16))
	return []codeCase{
		{name: "no loop", code: bs(0x01), want: bs(0x01)},
		{name: "no loop, some work",
			code: bs(0x41, 0x03, 0x41, 0x03, 0x6a, 0x1a),
			want: bs(0x41, 0x03, 0x41, 0x03, 0x6a, 0x1a)},
		{name: "one loop", code: bs(0x03, 0x40, 0x0b), want: cat(bs(0x03, 0x40), g, bs(0x0b))},
		{name: "nested loops",
			code: bs(0x03, 0x40, 0x03, 0x40, 0x0b, 0x0b),
			want: cat(bs(0x03, 0x40), g, bs(0x03, 0x40), g, bs(0x0b, 0x0b))},
		{name: "loop with a value block type",
			code: bs(0x03, i32, 0x41, 0x03, 0x0b, 0x1a),
			want: cat(bs(0x03, i32), g, bs(0x41, 0x03, 0x0b, 0x1a))},
		{name: "loop with a type index block type (multi-value)",
			code: bs(0x41, 0x03, 0x03, 0x02, 0x0b, 0x1a),
			want: cat(bs(0x41, 0x03, 0x03, 0x02), g, bs(0x0b, 0x1a))},
		{name: "loops inside if and else",
			code: bs(0x41, 0x01, 0x04, 0x40, 0x03, 0x40, 0x0b, 0x05, 0x03, 0x40, 0x0b, 0x0b),
			want: cat(bs(0x41, 0x01, 0x04, 0x40, 0x03, 0x40), g, bs(0x0b, 0x05, 0x03, 0x40), g, bs(0x0b, 0x0b))},
		{name: "loop in unreachable code",
			code: bs(0x02, 0x40, 0x0c, 0x00, 0x03, 0x40, 0x0b, 0x0b),
			want: cat(bs(0x02, 0x40, 0x0c, 0x00, 0x03, 0x40), g, bs(0x0b, 0x0b))},
		{name: "br_table with labels 3",
			code: bs(0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x02, 0x40,
				0x41, 0x03, 0x0e, 0x02, 0x03, 0x03, 0x03,
				0x0b, 0x0b, 0x0b, 0x0b, 0x03, 0x40, 0x0b),
			want: cat(bs(0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x02, 0x40,
				0x41, 0x03, 0x0e, 0x02, 0x03, 0x03, 0x03,
				0x0b, 0x0b, 0x0b, 0x0b, 0x03, 0x40), g, bs(0x0b))},
		{name: "memargs with offsets",
			code: bs(0x41, 0x00, 0x28, 0x02, 0x03, 0x1a, // i32.load offset=3
				0x41, 0x00, 0x42, 0x03, 0x37, 0x03, 0x83, 0x03, // i64.store offset=387
				0x03, 0x40, 0x0b),
			want: cat(bs(0x41, 0x00, 0x28, 0x02, 0x03, 0x1a,
				0x41, 0x00, 0x42, 0x03, 0x37, 0x03, 0x83, 0x03,
				0x03, 0x40), g, bs(0x0b))},
		{name: "constants",
			code: cat(bs(0x41, 0x83, 0x03, 0x1a, 0x42, 0x83, 0x83, 0x03, 0x1a),
				bs(0x43), repeat(0x03, 4), bs(0x1a), bs(0x44), repeat(0x03, 8), bs(0x1a),
				bs(0x03, 0x40, 0x0b)),
			want: cat(bs(0x41, 0x83, 0x03, 0x1a, 0x42, 0x83, 0x83, 0x03, 0x1a),
				bs(0x43), repeat(0x03, 4), bs(0x1a), bs(0x44), repeat(0x03, 8), bs(0x1a),
				bs(0x03, 0x40), g, bs(0x0b))},
		{name: "local declarations",
			locals: bs(0x02, 0x03, i32, 0x01, i64), // 3 i32, 1 i64
			code:   bs(0x20, 0x03, 0x1a, 0x03, 0x40, 0x0b),
			want:   cat(bs(0x20, 0x03, 0x1a, 0x03, 0x40), g, bs(0x0b))},
		{name: "calls, memory.size and memory.grow",
			code: bs(0x10, 0x00, 0x1a, 0x3f, 0x00, 0x40, 0x00, 0x1a, 0x41, 0x00, 0x11, 0x00, 0x00, 0x03, 0x40, 0x0b),
			want: cat(bs(0x10, 0x00, 0x1a, 0x3f, 0x00, 0x40, 0x00, 0x1a, 0x41, 0x00, 0x11, 0x00, 0x00, 0x03, 0x40), g, bs(0x0b))},
		{name: "select with types",
			code: bs(0x41, 0x03, 0x41, 0x03, 0x41, 0x01, 0x1c, 0x01, i32, 0x1a, 0x03, 0x40, 0x0b),
			want: cat(bs(0x41, 0x03, 0x41, 0x03, 0x41, 0x01, 0x1c, 0x01, i32, 0x1a, 0x03, 0x40), g, bs(0x0b))},
		{name: "0xfc bulk memory and saturating truncation",
			code: cat(
				bs(0x41, 0x00, 0x41, 0x03, 0x41, 0x00, 0xfc, 0x0b, 0x00),       // memory.fill
				bs(0x41, 0x00, 0x41, 0x03, 0x41, 0x01, 0xfc, 0x0a, 0x00, 0x00), // memory.copy
				bs(0x41, 0x00, 0x41, 0x00, 0x41, 0x03, 0xfc, 0x08, 0x00, 0x00), // memory.init
				bs(0xfc, 0x09, 0x00), // data.drop
				bs(0x43, 0x03, 0x03, 0x03, 0x03, 0xfc, 0x00, 0x1a), // i32.trunc_sat_f32_s
				bs(0x03, 0x40, 0x0b)),
			want: cat(
				bs(0x41, 0x00, 0x41, 0x03, 0x41, 0x00, 0xfc, 0x0b, 0x00),
				bs(0x41, 0x00, 0x41, 0x03, 0x41, 0x01, 0xfc, 0x0a, 0x00, 0x00),
				bs(0x41, 0x00, 0x41, 0x00, 0x41, 0x03, 0xfc, 0x08, 0x00, 0x00),
				bs(0xfc, 0x09, 0x00),
				bs(0x43, 0x03, 0x03, 0x03, 0x03, 0xfc, 0x00, 0x1a),
				bs(0x03, 0x40), g, bs(0x0b))},
		{name: "0xfc table and reference instructions",
			code: cat(
				bs(0xfc, 0x10, 0x00, 0x1a),                                     // table.size
				bs(0xd0, 0x70, 0xd1, 0x1a),                                     // ref.null func, ref.is_null
				bs(0x41, 0x00, 0x25, 0x00, 0x1a),                               // table.get
				bs(0x41, 0x00, 0xd2, 0x01, 0x26, 0x00),                         // table.set (ref.func 1)
				bs(0x41, 0x00, 0x41, 0x00, 0x41, 0x01, 0xfc, 0x0c, 0x00, 0x00), // table.init
				bs(0xfc, 0x0d, 0x00),                                           // elem.drop
				bs(0xd0, 0x70, 0x41, 0x03, 0xfc, 0x0f, 0x00, 0x1a),             // table.grow
				bs(0x41, 0x00, 0xd0, 0x70, 0x41, 0x00, 0xfc, 0x11, 0x00),       // table.fill
				bs(0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xfc, 0x0e, 0x00, 0x00), // table.copy
				bs(0x03, 0x40, 0x0b)),
			want: cat(
				bs(0xfc, 0x10, 0x00, 0x1a),
				bs(0xd0, 0x70, 0xd1, 0x1a),
				bs(0x41, 0x00, 0x25, 0x00, 0x1a),
				bs(0x41, 0x00, 0xd2, 0x01, 0x26, 0x00),
				bs(0x41, 0x00, 0x41, 0x00, 0x41, 0x01, 0xfc, 0x0c, 0x00, 0x00),
				bs(0xfc, 0x0d, 0x00),
				bs(0xd0, 0x70, 0x41, 0x03, 0xfc, 0x0f, 0x00, 0x1a),
				bs(0x41, 0x00, 0xd0, 0x70, 0x41, 0x00, 0xfc, 0x11, 0x00),
				bs(0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0xfc, 0x0e, 0x00, 0x00),
				bs(0x03, 0x40), g, bs(0x0b))},
		{name: "SIMD immediates",
			code: cat(
				v128, bs(0x1a), // v128.const
				v128, v128, bs(0xfd, 0x0d), repeat(0x03, 16), // i8x16.shuffle
				bs(0xfd, 0x15, 0x03, 0x1a),                                   // i8x16.extract_lane_s 3
				bs(0x41, 0x00, 0xfd, 0x00, 0x04, 0x03, 0x1a),                 // v128.load offset=3
				bs(0x41, 0x00), v128, bs(0xfd, 0x54, 0x00, 0x03, 0x03, 0x1a), // v128.load8_lane offset=3 lane 3
				bs(0x41, 0x00, 0xfd, 0x5c, 0x02, 0x03, 0x1a), // v128.load32_zero offset=3
				v128, bs(0xfd, 0x62, 0x1a), // i8x16.popcnt: no immediates
				bs(0x03, 0x40, 0x0b)),
			want: cat(
				v128, bs(0x1a),
				v128, v128, bs(0xfd, 0x0d), repeat(0x03, 16),
				bs(0xfd, 0x15, 0x03, 0x1a),
				bs(0x41, 0x00, 0xfd, 0x00, 0x04, 0x03, 0x1a),
				bs(0x41, 0x00), v128, bs(0xfd, 0x54, 0x00, 0x03, 0x03, 0x1a),
				bs(0x41, 0x00, 0xfd, 0x5c, 0x02, 0x03, 0x1a),
				v128, bs(0xfd, 0x62, 0x1a),
				bs(0x03, 0x40), g, bs(0x0b))},
		{name: "tail calls",
			features: api.CoreFeaturesV2 | experimental.CoreFeaturesTailCall,
			code:     bs(0x41, 0x03, 0x04, 0x40, 0x03, 0x40, 0x0b, 0x12, 0x01, 0x0b, 0x41, 0x00, 0x13, 0x00, 0x00),
			want:     cat(bs(0x41, 0x03, 0x04, 0x40, 0x03, 0x40), g, bs(0x0b, 0x12, 0x01, 0x0b, 0x41, 0x00, 0x13, 0x00, 0x00))},
		{name: "typed function references",
			features: api.CoreFeaturesV2 | experimental.CoreFeaturesTypedFunctionReferences,
			code: bs(0xd0, 0x70, 0xd4, 0x1a, // ref.null func, ref.as_non_null
				0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x02, 0x40,
				0xd0, 0x70, 0xd5, 0x03, 0x1a, // br_on_null 3
				0x0b, 0x0b, 0x0b, 0x0b,
				0x03, 0x40, 0x0b),
			want: cat(bs(0xd0, 0x70, 0xd4, 0x1a,
				0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x02, 0x40,
				0xd0, 0x70, 0xd5, 0x03, 0x1a,
				0x0b, 0x0b, 0x0b, 0x0b,
				0x03, 0x40), g, bs(0x0b))},
		{name: "try_table",
			tags:     true,
			features: api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling,
			code: bs(0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x02, 0x40,
				0x1f, 0x40, 0x02, 0x00, 0x00, 0x03, 0x02, 0x03, // catch tag 0 → 3, catch_all → 3
				0x03, 0x40, 0x0b, 0x08, 0x00, // loop end, throw 0
				0x0b, 0x0b, 0x0b, 0x0b, 0x0b),
			want: cat(bs(0x02, 0x40, 0x02, 0x40, 0x02, 0x40, 0x02, 0x40,
				0x1f, 0x40, 0x02, 0x00, 0x00, 0x03, 0x02, 0x03,
				0x03, 0x40), g, bs(0x0b, 0x08, 0x00,
				0x0b, 0x0b, 0x0b, 0x0b, 0x0b))},
	}
}

func TestInstrumentCode(t *testing.T) {
	for _, tc := range codeCases() {
		t.Run(tc.name, func(t *testing.T) {
			in := funcModule(tc.locals, tc.code, tc.tags)
			compile(t, in, tc.features)
			out, err := Instrument(in)
			if err != nil {
				t.Fatal(err)
			}
			m := compile(t, out, tc.features)
			if _, ok := m.ExportedFunctions()["f"]; !ok {
				t.Error("export f lost")
			}
			locals := tc.locals
			if locals == nil {
				locals = bs(0x00)
			}
			want := cat(locals, tc.want, bs(0x0b))
			if got := bodies(t, out); len(got) != 1 || !bytes.Equal(got[0], want) {
				t.Errorf("body\n got % x\nwant % x", got, want)
			}
			// Everything but the code section and the added global and
			// export sections is copied as is.
			inSecs, outSecs := parse(t, in), parse(t, out)
			var kept []wasmSection
			for _, s := range outSecs {
				if s.id != secCode && s.id != secGlobal && s.id != secExport {
					kept = append(kept, s)
				}
			}
			var want2 []wasmSection
			for _, s := range inSecs {
				if s.id != secCode && s.id != secExport {
					want2 = append(want2, s)
				}
			}
			if fmt.Sprint(kept) != fmt.Sprint(want2) {
				t.Errorf("other sections changed:\n got %v\nwant %v", kept, want2)
			}
		})
	}
}

// The guard decodes the same way everywhere: one instrumented function in
// a module of several is exactly its input plus the guards.
func TestInstrumentSeveralFunctions(t *testing.T) {
	loop := bs(0x03, 0x40, 0x0b)
	in := module(
		typeSec,
		sec(2, vec(yieldImport)),
		sec(3, vec(bs(0x00), bs(0x00), bs(0x00))),
		sec(10, vec(fn(nil, nil), fn(nil, loop), fn(bs(0x01, 0x01, i32), cat(loop, loop)))),
	)
	out, err := Instrument(in)
	if err != nil {
		t.Fatal(err)
	}
	compile(t, out, 0)
	want := [][]byte{
		bs(0x00, 0x0b),
		cat(bs(0x00, 0x03, 0x40), guard00, bs(0x0b, 0x0b)),
		cat(bs(0x01, 0x01, i32, 0x03, 0x40), guard00, bs(0x0b, 0x03, 0x40), guard00, bs(0x0b, 0x0b)),
	}
	if got := bodies(t, out); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bodies\n got % x\nwant % x", got, want)
	}
}

// sectionCase is a module whose function 1, exported as "f" or not at
// all, loops once and returns.
type sectionCase struct {
	name    string
	in      []byte
	ids     []byte // section ids of the output, in order
	globals []byte // the output's global section
	exports []byte // the output's export section
}

func sectionCases() []sectionCase {
	loopOnce := fn(nil, bs(0x03, 0x40, 0x0b))
	newGlobals := bs(i32, 0x01, 0x41, 0x00, 0x0b, i32, 0x01, 0x41, 0x80, 0x80, 0x04, 0x0b)
	i64Global := bs(i64, 0x00, 0x42, 0x07, 0x0b)
	flag := func(index int) []byte { return cat(str(FlagExport), bs(0x03), uleb(index)) }
	return []sectionCase{
		{
			name: "no global or export section",
			in: module(typeSec, sec(2, vec(yieldImport)), sec(3, vec(bs(0x00))),
				sec(10, vec(loopOnce))),
			ids:     bs(1, 2, 3, 6, 7, 10),
			globals: cat(uleb(2), newGlobals),
			exports: vec(flag(0)),
		},
		{
			name: "existing global and export sections",
			in: module(typeSec, sec(2, vec(yieldImport)), sec(3, vec(bs(0x00))),
				sec(6, vec(i64Global)), sec(7, vec(exportFunc("f", 1))), sec(10, vec(loopOnce))),
			ids:     bs(1, 2, 3, 6, 7, 10),
			globals: cat(uleb(3), i64Global, newGlobals),
			exports: vec(exportFunc("f", 1), flag(1)),
		},
		{
			name: "imported globals",
			in: module(typeSec,
				sec(2, vec(importGlobal("e", "g", i32), yieldImport, importGlobal("e", "h", i64))),
				sec(3, vec(bs(0x00))),
				sec(6, vec(i64Global)), sec(7, vec(exportFunc("f", 1))), sec(10, vec(loopOnce))),
			ids:     bs(1, 2, 3, 6, 7, 10),
			globals: cat(uleb(3), i64Global, newGlobals),
			exports: vec(exportFunc("f", 1), flag(3)),
		},
		{
			name: "custom sections, start and data count",
			in: module(custom("first", 1, 2, 3), typeSec, sec(2, vec(yieldImport)), sec(3, vec(bs(0x00))),
				sec(5, vec(bs(0x00, 0x01))), custom("between", 0x03, 0x40),
				sec(8, uleb(1)), sec(12, uleb(1)), sec(10, vec(loopOnce)),
				sec(11, vec(cat(bs(0x01), str("abc")))), custom("name", 0x01, 0x04, 0x01, 0x01, 0x01, 'f')),
			ids:     bs(0, 1, 2, 3, 5, 6, 7, 0, 8, 12, 10, 11, 0),
			globals: cat(uleb(2), newGlobals),
			exports: vec(flag(0)),
		},
		{
			name: "trailing custom section stays last",
			in: module(typeSec, sec(2, vec(yieldImport)),
				custom("name", 0x30, 0x00, 0x00, 0x30, 0x01, 0x30)), // found by FuzzInstrument
			ids:     bs(1, 2, 6, 7, 0),
			globals: cat(uleb(2), newGlobals),
			exports: vec(flag(0)),
		},
		{
			name:    "no sections at all but sched_yield",
			in:      module(typeSec, sec(2, vec(yieldImport))),
			ids:     bs(1, 2, 6, 7),
			globals: cat(uleb(2), newGlobals),
			exports: vec(flag(0)),
		},
	}
}

// provider exports the globals the "imported globals" case imports.
var provider = module(
	sec(6, vec(bs(i32, 0x00, 0x41, 0x05, 0x0b), bs(i64, 0x00, 0x42, 0x07, 0x0b))),
	sec(7, vec(cat(str("g"), bs(0x03, 0x00)), cat(str("h"), bs(0x03, 0x01)))),
)

func TestInstrumentSections(t *testing.T) {
	ctx := context.Background()
	for _, tc := range sectionCases() {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Instrument(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var ids []byte
			for _, s := range parse(t, out) {
				ids = append(ids, s.id)
			}
			if !bytes.Equal(ids, tc.ids) {
				t.Errorf("section ids % x, want % x", ids, tc.ids)
			}
			if got := sectionBody(t, out, secGlobal); !bytes.Equal(got, tc.globals) {
				t.Errorf("global section\n got % x\nwant % x", got, tc.globals)
			}
			if got := sectionBody(t, out, secExport); !bytes.Equal(got, tc.exports) {
				t.Errorf("export section\n got % x\nwant % x", got, tc.exports)
			}
			for i, s := range parse(t, tc.in) {
				if s.id == 0 && !containsSection(parse(t, out), s) {
					t.Errorf("custom section %d lost", i)
				}
			}
			compile(t, out, 0)

			// The flag is the global the loops check: f returns while it
			// is 0 and traps once it is set.
			r := wazero.NewRuntime(ctx)
			defer r.Close(ctx)
			wasi_snapshot_preview1.MustInstantiate(ctx, r)
			if _, err := r.InstantiateWithConfig(ctx, provider, wazero.NewModuleConfig().WithName("e")); err != nil {
				t.Fatal(err)
			}
			mod, err := r.InstantiateWithConfig(ctx, out, wazero.NewModuleConfig().WithName("").WithStartFunctions())
			if err != nil {
				t.Fatal(err)
			}
			flag, ok := mod.ExportedGlobal(FlagExport).(api.MutableGlobal)
			if !ok || flag.Type() != api.ValueTypeI32 || flag.Get() != 0 {
				t.Fatalf("flag export: %v, %v", flag, ok)
			}
			f := mod.ExportedFunction("f")
			if f == nil {
				return
			}
			if _, err := f.Call(ctx); err != nil {
				t.Fatalf("f with the flag clear: %v", err)
			}
			flag.Set(1)
			if _, err := f.Call(ctx); err == nil || !strings.Contains(err.Error(), "unreachable") {
				t.Fatalf("f with the flag set: err = %v, want an unreachable trap", err)
			}
		})
	}
}

func containsSection(secs []wasmSection, s wasmSection) bool {
	for _, o := range secs {
		if o.id == s.id && bytes.Equal(o.body, s.body) {
			return true
		}
	}
	return false
}

type rejectCase struct {
	name  string
	in    []byte
	err   error
	where []string // substrings the message must contain
}

func rejectCases() []rejectCase {
	good := funcModule(nil, bs(0x03, 0x40, 0x0b), false)
	// oneFunc has a single function, 1, whose body is code (no final end
	// added); the body starts at byte len(oneFunc(nil))-1.
	oneFunc := func(code []byte) []byte {
		return module(typeSec, sec(2, vec(yieldImport)), sec(3, vec(bs(0x00))),
			sec(10, uleb(1), uleb(len(code)), code))
	}
	at := func(code []byte, i int) string {
		return fmt.Sprintf("byte %d:", len(oneFunc(code))-len(code)+i)
	}
	unknownOp := bs(0x00, 0x41, 0x03, 0xff, 0x0b)
	badLEB := bs(0x00, 0x20, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0b)
	hugeLocals := bs(0xff, 0xff, 0xff, 0xff, 0x0f, 0x0b)
	hugeTable := bs(0x00, 0x41, 0x00, 0x0e, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x0b)
	unknownFC := bs(0x00, 0xfc, 0x20, 0x0b)
	truncatedImm := bs(0x00, 0x44, 0x03, 0x03)
	return []rejectCase{
		{"not wasm", []byte("\x00asm\x02\x00\x00\x00"), ErrMalformed, []string{"not a WebAssembly 1.0 binary"}},
		{"too short", []byte("\x00as"), ErrMalformed, nil},
		{"truncated section", good[:len(good)-3], ErrMalformed, []string{"section 11,", "bytes needed"}},
		{"bad section size LEB", cat([]byte(header), bs(0x0a, 0xff, 0xff, 0xff, 0xff, 0xff)), ErrMalformed,
			[]string{"section 10,", "byte 9:", "longer than 5 bytes"}},
		{"unknown section", module(typeSec, sec(14, bs(0x00))), ErrMalformed, []string{"section 14,", "unknown section id"}},
		{"sections out of order", module(sec(3, vec()), typeSec), ErrMalformed, []string{"section 1,", "out of order"}},
		{"repeated section", module(typeSec, typeSec), ErrMalformed, []string{"section 1,", "repeated"}},
		{"unknown opcode", oneFunc(unknownOp), ErrMalformed,
			[]string{"section 10, function 1, " + at(unknownOp, 3), "unknown opcode 0xff"}},
		{"bad LEB in code", oneFunc(badLEB), ErrMalformed,
			[]string{"section 10, function 1, " + at(badLEB, 2), "longer than 5 bytes"}},
		{"huge local count", oneFunc(hugeLocals), ErrMalformed, []string{"function 1,", "vector of 4294967295 elements"}},
		{"huge br_table", oneFunc(hugeTable), ErrMalformed, []string{"function 1,", "vector of 4294967295 elements"}},
		{"unknown 0xfc opcode", oneFunc(unknownFC), ErrMalformed, []string{at(unknownFC, 2), "unknown 0xfc opcode 32"}},
		{"truncated immediate", oneFunc(truncatedImm), ErrMalformed, []string{"function 1,", "8 bytes needed, 2 left"}},
		{"body longer than the section", module(typeSec, sec(2, vec(yieldImport)), sec(3, vec(bs(0x00))),
			sec(10, bs(0x01, 0x09, 0x00, 0x0b))), ErrMalformed, []string{"section 10, function 1,"}},
		{"trailing bytes in code section", module(typeSec, sec(2, vec(yieldImport)), sec(3, vec(bs(0x00))),
			sec(10, vec(fn(nil, nil)), bs(0x00))), ErrMalformed, []string{"section 10,", "1 trailing bytes"}},
		{"bad import kind", module(typeSec, sec(2, vec(yieldImport, cat(str("a"), str("b"), bs(0x09))))), ErrMalformed,
			[]string{"section 2,", "unknown import kind 0x9"}},
		{"sched_yield type out of range", module(typeSec, sec(2, vec(importFunc("wasi_snapshot_preview1", "sched_yield", 7)))),
			ErrMalformed, []string{"section 1:", "type 7", "3 types"}},
		{"no sched_yield", module(typeSec, sec(3, vec(bs(0x00))), sec(10, vec(fn(nil, nil)))), ErrNoYield, nil},
		{"sched_yield of the wrong type", module(typeSec, sec(2, vec(importFunc("wasi_snapshot_preview1", "sched_yield", 0)))),
			ErrNoYield, []string{"type 0"}},
		{"flag already exported", module(typeSec, sec(2, vec(yieldImport)), sec(6, vec(bs(i32, 0x01, 0x41, 0x00, 0x0b))),
			sec(7, vec(cat(str(FlagExport), bs(0x03, 0x00))))), ErrFlagExported, nil},
	}
}

func TestInstrumentRejects(t *testing.T) {
	for _, tc := range rejectCases() {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out, err := Instrument(tc.in)
			if err == nil {
				t.Fatalf("no error; output % x", out)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("error %q does not wrap %q", err, tc.err)
			}
			for _, w := range tc.where {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			// Generous: it proves a hostile size is refused without reading
			// it, not how fast (a loaded machine under -race is slow).
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v to reject", d)
			}
		})
	}
}

// Instrumenting twice is refused: the second pass would add a second flag
// that nobody sets.
func TestInstrumentTwice(t *testing.T) {
	out, err := Instrument(funcModule(nil, bs(0x03, 0x40, 0x0b), false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Instrument(out); !errors.Is(err, ErrFlagExported) {
		t.Fatalf("second Instrument: err = %v, want ErrFlagExported", err)
	}
}

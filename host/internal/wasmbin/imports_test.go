package wasmbin

import (
	"errors"
	"testing"
)

func TestImports(t *testing.T) {
	body := []byte{0x06,
		1, 'e', 1, 'f', KindFunc, 0x02,
		1, 'e', 1, 'g', KindGlobal, 0x7f, 0x01,
		1, 'e', 1, 'm', KindMemory, 0x01, 0x01, 0x02,
		1, 'e', 1, 't', KindTable, 0x70, 0x00, 0x01,
		1, 'e', 1, 'r', KindTable, 0x64, 0x70, 0x00, 0x01, // (ref func): a typed reference
		1, 'e', 1, 'x', KindTag, 0x00, 0x03,
	}
	got, err := Imports(Section{ID: SectionImport, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	want := []Import{
		{"e", "f", KindFunc, 2}, {"e", "g", KindGlobal, 0}, {"e", "m", KindMemory, 0},
		{"e", "t", KindTable, 0}, {"e", "r", KindTable, 0}, {"e", "x", KindTag, 3},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("import %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range [][]byte{
		{0x01},
		{0x01, 5, 'e'},
		{0x01, 1, 'e', 1, 'f', 0x09},
		{0x01, 1, 'e', 1, 'f', KindFunc},
		{0x01, 1, 'e', 1, 'f', KindFunc, 0x00, 0xff}, // trailing bytes
		{0xff, 0xff, 0xff, 0xff, 0x0f},               // four billion imports in no bytes
	} {
		if _, err := Imports(Section{ID: SectionImport, Body: bad}); !errors.Is(err, ErrMalformed) {
			t.Errorf("Imports(% x): err = %v, want ErrMalformed", bad, err)
		}
	}
}

package wasmbin

import (
	"errors"
	"testing"
)

func TestImports(t *testing.T) {
	body := []byte{0x04,
		1, 'e', 1, 'f', KindFunc, 0x00,
		1, 'e', 1, 'g', KindGlobal, 0x7f, 0x01,
		1, 'e', 1, 'm', KindMemory, 0x01, 0x01, 0x02,
		1, 'e', 1, 't', KindTable, 0x70, 0x00, 0x01,
	}
	got, err := Imports(body)
	if err != nil {
		t.Fatal(err)
	}
	want := []Import{{"e", "f", KindFunc}, {"e", "g", KindGlobal}, {"e", "m", KindMemory}, {"e", "t", KindTable}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("import %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range [][]byte{{0x01}, {0x01, 5, 'e'}, {0x01, 1, 'e', 1, 'f', 0x09}, {0x01, 1, 'e', 1, 'f', KindFunc}} {
		if _, err := Imports(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("Imports(% x): err = %v, want ErrMalformed", bad, err)
		}
	}
}

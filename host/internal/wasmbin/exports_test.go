package wasmbin

import (
	"errors"
	"slices"
	"testing"
)

func TestExports(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want []Export // nil: ErrMalformed
	}{
		{"empty", []byte{0x00}, []Export{}},
		{"kinds", []byte{0x03,
			6, 'm', 'e', 'm', 'o', 'r', 'y', KindMemory, 0x00,
			4, 'c', 'a', 'l', 'l', KindFunc, 0x81, 0x01, // index 129: a two-byte LEB128
			1, 'g', KindGlobal, 0x02,
		}, []Export{{"memory", KindMemory, 0}, {"call", KindFunc, 129}, {"g", KindGlobal, 2}}},
		{"no count", []byte{}, nil},
		{"name past the end", []byte{0x01, 5, 'e'}, nil},
		{"no index", []byte{0x01, 1, 'f', KindFunc}, nil},
		{"trailing bytes", []byte{0x01, 1, 'f', KindFunc, 0x00, 0xff}, nil},
		{"fewer entries than counted", []byte{0x02, 1, 'f', KindFunc, 0x00}, nil},
		{"four billion exports in no bytes", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Exports(Section{ID: SectionExport, Body: tt.body})
			if tt.want == nil {
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("Exports(% x) = %+v, %v; want ErrMalformed", tt.body, got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Exports(% x) = %+v, %v; want %+v", tt.body, got, err, tt.want)
			}
		})
	}
}

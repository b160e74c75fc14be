package wasmbin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func section(id byte, body ...byte) []byte { return AppendSection(nil, id, body) }

func custom(name, payload string) []byte {
	return section(SectionCustom, append(append(binary.AppendUvarint(nil, uint64(len(name))), name...), payload...)...)
}

func module(sections ...[]byte) []byte {
	return bytes.Join(append([][]byte{[]byte(Header)}, sections...), nil)
}

// A small valid module: a type section, a custom section, an import
// section and a trailing custom section.
var sample = module(
	section(SectionType, 0x01, 0x60, 0x00, 0x00),
	custom("first", "one"),
	section(SectionImport, 0x01, 1, 'e', 1, 'f', KindFunc, 0x00),
	custom("toolhost.manifest", `{"name":"x"}`),
)

func TestSectionsAndScanFileAgree(t *testing.T) {
	sections, err := Sections(sample)
	if err != nil {
		t.Fatal(err)
	}
	headers, err := ScanFile(bytes.NewReader(sample), int64(len(sample)))
	if err != nil {
		t.Fatal(err)
	}
	if len(sections) != 4 || len(headers) != 4 {
		t.Fatalf("%d sections, %d headers, want 4", len(sections), len(headers))
	}
	for i, s := range sections {
		h := headers[i]
		body, err := h.Read(bytes.NewReader(sample))
		if err != nil {
			t.Fatal(err)
		}
		want := s.Body
		if s.ID == SectionCustom {
			var name string
			if name, want, err = s.Custom(); err != nil || name != h.Name {
				t.Errorf("section %d: name %q (%v), header says %q", i, name, err, h.Name)
			}
		}
		if h.ID != s.ID || !bytes.Equal(body, want) {
			t.Errorf("section %d: header %+v reads % x, want id %d body % x", i, h, body, s.ID, want)
		}
	}
}

func TestCustomSection(t *testing.T) {
	got, ok, err := CustomSection(sample, "toolhost.manifest")
	if err != nil || !ok || string(got) != `{"name":"x"}` {
		t.Fatalf("CustomSection = %q, %v, %v", got, ok, err)
	}
	if _, ok, err := CustomSection(sample, "absent"); ok || err != nil {
		t.Fatalf("absent section: found %v, err %v", ok, err)
	}
	// Replacing keeps every other section and moves the new one last;
	// doing it twice changes nothing more.
	once, err := WithCustomSection(sample, "first", []byte("uno"))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := WithCustomSection(once, "first", []byte("uno"))
	if err != nil || !bytes.Equal(once, twice) {
		t.Fatalf("second replacement changed the module (%v)", err)
	}
	want := module(
		section(SectionType, 0x01, 0x60, 0x00, 0x00),
		section(SectionImport, 0x01, 1, 'e', 1, 'f', KindFunc, 0x00),
		custom("toolhost.manifest", `{"name":"x"}`),
		custom("first", "uno"),
	)
	if !bytes.Equal(once, want) {
		t.Errorf("WithCustomSection =\n% x\nwant\n% x", once, want)
	}
}

// A custom section name longer than the header buffer is read from the
// file.
func TestScanFileLongCustomName(t *testing.T) {
	name := strings.Repeat("n", 300)
	m := module(custom(name, "payload"))
	headers, err := ScanFile(bytes.NewReader(m), int64(len(m)))
	if err != nil {
		t.Fatal(err)
	}
	body, err := headers[0].Read(bytes.NewReader(m))
	if err != nil || headers[0].Name != name || string(body) != "payload" {
		t.Fatalf("header %q..., body %q, %v", headers[0].Name[:10], body, err)
	}
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"not wasm", []byte("hello world"), "not a WebAssembly 1.0 binary"},
		{"too short", []byte("\x00as"), "not a WebAssembly 1.0 binary"},
		{"size past the end", module([]byte{SectionCustom, 0xff, 0xff, 0xff, 0xff, 0x0f}), "section 0, byte 14: 4294967295 bytes needed"},
		{"size LEB too long", module([]byte{SectionCode, 0xff, 0xff, 0xff, 0xff, 0xff}), "longer than 5 bytes"},
		{"custom name past the section", module(section(SectionCustom, 9, 'a')), "section 0, byte 10: custom section name longer than the section"},
		{"unknown section", module(section(14, 0)), "unknown section id"},
		{"out of order", module(section(3, 0), section(SectionType, 0)), "out of order"},
		{"repeated", module(section(SectionType, 0), section(SectionType, 0)), "repeated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err1 := Sections(tt.in)
			_, err2 := ScanFile(bytes.NewReader(tt.in), int64(len(tt.in)))
			_, _, err3 := CustomSection(tt.in, "a")
			for i, err := range []error{err1, err2, err3} {
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("reader %d: err = %v, want ErrMalformed saying %q", i, err, tt.want)
				}
			}
		})
	}
}

// FuzzSections checks that the readers never panic, that the in-memory
// and file readers agree, and that replacing a custom section keeps a
// module readable with the new payload in it.
func FuzzSections(f *testing.F) {
	f.Add(sample)
	f.Add(module(custom(strings.Repeat("n", 300), "x")))
	f.Add(module(section(SectionImport, 0x01, 1, 'e', 1, 'r', KindTable, 0x64, 0x70, 0x00, 0x01)))
	f.Fuzz(func(t *testing.T, in []byte) {
		sections, err := Sections(in)
		headers, ferr := ScanFile(bytes.NewReader(in), int64(len(in)))
		if (err == nil) != (ferr == nil) {
			t.Fatalf("Sections err %v, ScanFile err %v", err, ferr)
		}
		if err != nil {
			return
		}
		if len(sections) != len(headers) {
			t.Fatalf("%d sections, %d headers", len(sections), len(headers))
		}
		for _, s := range sections {
			if s.ID == SectionImport {
				Imports(s)
			}
		}
		out, err := WithCustomSection(in, "toolhost.fuzz", []byte("payload"))
		if err != nil {
			return // a custom section with a bad name
		}
		got, ok, err := CustomSection(out, "toolhost.fuzz")
		if err != nil || !ok || string(got) != "payload" {
			t.Fatalf("after WithCustomSection: %q %v %v", got, ok, err)
		}
	})
}

package abi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

func TestResultRoundTrip(t *testing.T) {
	tests := []Result{
		{},
		{Content: []byte("hello")},
		{Kind: KindStaleFile, Flags: ResultNoTruncate, Content: []byte("msg"), Details: []byte(`{"file":"a"}`)},
		{Content: []byte("2 files"), Structured: []byte(`{"files":2}`)},
		{Flags: ResultNoTruncate, Content: []byte("x"), Details: []byte(`{"a":1}`), Structured: []byte(`{}`)},
	}
	for _, want := range tests {
		got, err := DecodeResult(AppendResult(nil, want))
		if err != nil {
			t.Fatalf("DecodeResult(%+v): %v", want, err)
		}
		if got.Kind != want.Kind || got.Flags != want.Flags || !bytes.Equal(got.Content, want.Content) ||
			!bytes.Equal(got.Details, want.Details) || !bytes.Equal(got.Structured, want.Structured) {
			t.Errorf("round trip: got %+v, want %+v", got, want)
		}
	}
}

// decodeResultBefore is DecodeResult as it was before results could carry
// a structured field: exactly three fields, nothing after them. Hosts
// built then decode results this way.
func decodeResultBefore(b []byte) (Result, error) {
	if len(b) < 8 || string(b[:4]) != "THR1" {
		return Result{}, ErrMalformedResult
	}
	r := Result{Flags: uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24}
	rest := b[8:]
	var kind []byte
	var err error
	for _, f := range []*[]byte{&kind, &r.Content, &r.Details} {
		if *f, rest, err = nextField(rest); err != nil {
			return Result{}, err
		}
	}
	if len(rest) != 0 {
		return Result{}, ErrMalformedResult
	}
	r.Kind = ErrorKind(kind)
	return r, nil
}

// A result without a structured field is the same bytes both ways: a
// plugin built before the field reaches a host that knows it, and a
// plugin built after it that sets none reaches a host that does not.
func TestResultWithoutStructuredIsTheEarlierLayout(t *testing.T) {
	// The success result "2 lines" of abi/README.md, as plugins wrote it
	// before the structured field.
	earlier := []byte("THR1\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x002 lines\x00\x00\x00\x00")
	got, err := DecodeResult(earlier)
	if err != nil || string(got.Content) != "2 lines" || got.Kind != "" || got.Structured != nil {
		t.Fatalf("DecodeResult(earlier layout) = %+v, %v; want content \"2 lines\" and no structured", got, err)
	}
	if now := AppendResult(nil, Result{Content: []byte("2 lines")}); !bytes.Equal(now, earlier) {
		t.Errorf("AppendResult without structured = % x, want the earlier layout % x", now, earlier)
	}
	for _, r := range []Result{{Content: []byte("a")}, {Kind: KindBadArgs, Content: []byte("no path"), Details: []byte(`{"argument":"path"}`)}} {
		if _, err := decodeResultBefore(AppendResult(nil, r)); err != nil {
			t.Errorf("a host predating structured results cannot decode %+v: %v", r, err)
		}
	}
	// One with a structured field is refused by such a host, not misread.
	if _, err := decodeResultBefore(AppendResult(nil, Result{Content: []byte("a"), Structured: []byte(`{}`)})); err == nil {
		t.Error("a host predating structured results decoded one carrying a structured field")
	}
	// An empty structured field written out is the same as none.
	explicit := binary.LittleEndian.AppendUint32(bytes.Clone(earlier), 0)
	if got, err := DecodeResult(explicit); err != nil || got.Structured != nil {
		t.Errorf("DecodeResult(empty structured field) = %+v, %v", got, err)
	}
}

func TestDecodeResultRejectsMalformed(t *testing.T) {
	good := AppendResult(nil, Result{Content: []byte("abc")})
	tests := map[string][]byte{
		"empty":            nil,
		"bad magic":        append([]byte("XXXX"), good[4:]...),
		"truncated":        good[:len(good)-2],
		"trailing bytes":   append(bytes.Clone(good), 0),
		"huge length":      append(bytes.Clone(good[:8]), 0xff, 0xff, 0xff, 0x7f),
		"structured cut":   AppendResult(nil, Result{Content: []byte("a"), Structured: []byte(`{"a":1}`)})[:30],
		"after structured": append(AppendResult(nil, Result{Structured: []byte(`{}`)}), 0, 0, 0, 0),
	}
	for name, b := range tests {
		if _, err := DecodeResult(b); !errors.Is(err, ErrMalformedResult) {
			t.Errorf("%s: err = %v, want ErrMalformedResult", name, err)
		}
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	fi := FileInfo{Type: TypeSymlink, Mode: 0o640, Size: 1 << 40, ModTime: -5, Path: "a/b c"}
	got, rest, err := DecodeFileInfo(AppendFileInfo(nil, fi))
	if err != nil || got != fi || len(rest) != 0 {
		t.Errorf("FileInfo round trip: %+v %v %d", got, err, len(rest))
	}

	entries := []FileInfo{fi, {Type: TypeDir, Path: "d"}}
	b := AppendListHeader(nil, ListTruncated, uint32(len(entries)))
	for _, e := range entries {
		b = AppendFileInfo(b, e)
	}
	flags, gotEntries, err := DecodeListing(b)
	if err != nil || flags != ListTruncated || len(gotEntries) != 2 || gotEntries[1] != entries[1] {
		t.Errorf("listing round trip: %v %v %+v", flags, err, gotEntries)
	}
	if _, _, err := DecodeListing(AppendListHeader(nil, 0, 1<<30)); err == nil {
		t.Error("listing claiming 2^30 entries in 8 bytes decoded without error")
	}

	ri := ReadInfo{FileSize: 9, ModTime: 7, Flags: ReadEOF | ReadRecorded, Lines: 3}
	gotRI, data, err := DecodeReadInfo(append(AppendReadInfo(nil, ri), "xyz"...))
	if err != nil || gotRI != ri || string(data) != "xyz" {
		t.Errorf("ReadInfo round trip: %+v %q %v", gotRI, data, err)
	}

	wi := WriteInfo{Flags: WriteCreated, Size: 12, Path: "new.txt"}
	gotWI, err := DecodeWriteInfo(AppendWriteInfo(nil, wi))
	if err != nil || gotWI != wi {
		t.Errorf("WriteInfo round trip: %+v %v", gotWI, err)
	}
}

func TestHostReturnEncoding(t *testing.T) {
	tests := []struct {
		v      int64
		status Status
		n      uint32
	}{
		{0, StatusOK, 0},
		{42, StatusOK, 42},
		{EncodeFailure(StatusDenied, 17), StatusDenied, 17},
		{EncodeFailure(StatusCancelled, 0), StatusCancelled, 0},
	}
	for _, tt := range tests {
		if s, n := DecodeReturn(tt.v); s != tt.status || n != tt.n {
			t.Errorf("DecodeReturn(%d) = %v,%d; want %v,%d", tt.v, s, n, tt.status, tt.n)
		}
	}
}

func TestLimits(t *testing.T) {
	l := Limits{MaxOutputBytes: 100, AvailableCapacityBytes: 64, MaxFileReadBytes: 200}
	if l.OutputLimit() != 64 || l.ReadLimit() != 64 {
		t.Errorf("limits: output %d read %d, want 64 64", l.OutputLimit(), l.ReadLimit())
	}
	if (Limits{MaxOutputBytes: 10}).OutputLimit() != 10 {
		t.Error("unknown capacity must not cap the output")
	}
}

func TestPack(t *testing.T) {
	if p, n := Unpack(Pack(0xdeadbeef, 7)); p != 0xdeadbeef || n != 7 {
		t.Errorf("Unpack(Pack) = %#x,%d", p, n)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	want := Request{ID: "call_1", Tool: "read_file", Conversation: "c", Args: []byte(`{"path":"a"}`),
		Limits: Limits{MaxOutputBytes: 1, AvailableCapacityBytes: 2, MaxFileReadBytes: 3, MaxScanBytes: 4, MaxPatchBytes: 5}}
	got, err := DecodeRequest(AppendRequest(nil, want))
	if err != nil || got.ID != want.ID || got.Tool != want.Tool || got.Conversation != want.Conversation ||
		string(got.Args) != string(want.Args) || got.Limits != want.Limits {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	b := AppendRequest(nil, want)
	for _, cut := range []int{0, 3, 10, len(b) - 1} {
		if _, err := DecodeRequest(b[:cut]); err == nil {
			t.Errorf("truncated request (%d bytes) decoded", cut)
		}
	}
}

func TestCommitRequestRoundTrip(t *testing.T) {
	want := []CommitFile{
		{Flags: CommitNew | CommitCreateDirs, Path: "a/b.txt", Data: []byte("x\n")},
		{Path: "c", Data: nil},
	}
	got, err := DecodeCommitRequest(AppendCommitRequest(nil, want))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d files, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Flags != want[i].Flags || got[i].Path != want[i].Path || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Errorf("file %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	good := AppendCommitRequest(nil, want)
	for name, b := range map[string][]byte{
		"empty":          nil,
		"huge count":     {0xff, 0xff, 0xff, 0x7f},
		"truncated":      good[:len(good)-1],
		"trailing bytes": append(bytes.Clone(good), 0),
	} {
		if _, err := DecodeCommitRequest(b); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func TestCommitResultAndProcResult(t *testing.T) {
	resp := []byte{2, 0, 0, 0}
	resp = AppendWriteInfo(resp, WriteInfo{Flags: WriteCreated, Size: 3, Path: "n"})
	resp = AppendWriteInfo(resp, WriteInfo{Size: 9, Path: "m/o"})
	infos, err := DecodeCommitResult(resp)
	if err != nil || len(infos) != 2 || infos[0] != (WriteInfo{Flags: WriteCreated, Size: 3, Path: "n"}) || infos[1].Path != "m/o" {
		t.Fatalf("DecodeCommitResult = %+v, %v", infos, err)
	}
	if _, err := DecodeCommitResult(resp[:len(resp)-1]); err == nil {
		t.Error("truncated commit result decoded")
	}

	want := ProcResult{ExitCode: -1, Flags: ProcStdoutCut, StdoutBytes: 10, StderrBytes: 2, Stdout: []byte("out"), Stderr: []byte("er"), StdoutTail: []byte("end")}
	got, err := DecodeProcResult(AppendProcResult(nil, want))
	if err != nil || got.ExitCode != -1 || got.Flags != want.Flags || got.StdoutBytes != 10 || got.StderrBytes != 2 ||
		string(got.Stdout) != "out" || string(got.Stderr) != "er" || string(got.StdoutTail) != "end" || len(got.StderrTail) != 0 {
		t.Fatalf("DecodeProcResult = %+v, %v", got, err)
	}
	if _, err := DecodeProcResult(AppendProcResult(nil, want)[:20]); err == nil {
		t.Error("truncated proc result decoded")
	}
}

// FuzzDecodeCommitRequest: fs_commit decodes bytes a guest wrote; no input
// may panic the host, and what decodes encodes back to the same bytes.
func FuzzDecodeCommitRequest(f *testing.F) {
	f.Add(AppendCommitRequest(nil, []CommitFile{{Flags: CommitNew, Path: "a", Data: []byte("x")}}))
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := DecodeCommitRequest(b)
		if err != nil {
			return
		}
		if again := AppendCommitRequest(nil, files); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs: %x vs %x", again, b)
		}
	})
}

// A limit left at zero is the default, never none: a host function given
// no limits still bounds what it holds.
func TestLimitsWithDefaults(t *testing.T) {
	def := DefaultLimits()
	if got := (Limits{}).WithDefaults(); got != def {
		t.Errorf("zero limits: %+v, want %+v", got, def)
	}
	got := Limits{MaxOutputBytes: 10, MaxScanBytes: -1}.WithDefaults()
	want := def
	want.MaxOutputBytes = 10
	if got != want {
		t.Errorf("partial limits: %+v, want %+v", got, want)
	}
}

package abi

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
)

// Request is what the host passes to the call export. It is binary, not
// JSON: decoding JSON costs a Go guest microseconds per field, and only the
// arguments need to be JSON.
type Request struct {
	ID           string
	Tool         string
	Conversation string
	Args         json.RawMessage // JSON object, validated against the schema
	Limits       Limits
}

// Request envelope layout, little-endian:
//
//	u32 magic "THQ1" | u32 len + id | u32 len + tool | u32 len + conversation
//	| i64 × 5 limits (max_output, available_capacity, max_file_read, max_scan, max_patch)
//	| u32 len + args
const requestMagic = 0x31514854 // "THQ1"

// AppendRequest encodes r after dst.
func AppendRequest(dst []byte, r Request) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, requestMagic)
	dst = appendField(dst, []byte(r.ID))
	dst = appendField(dst, []byte(r.Tool))
	dst = appendField(dst, []byte(r.Conversation))
	for _, v := range r.Limits.values() {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(*v))
	}
	return appendField(dst, r.Args)
}

// DecodeRequest decodes a request envelope. Args aliases b.
func DecodeRequest(b []byte) (Request, error) {
	if len(b) < 4 || binary.LittleEndian.Uint32(b) != requestMagic {
		return Request{}, fmt.Errorf("%w: bad request header", ErrMalformedResult)
	}
	var r Request
	rest := b[4:]
	for _, s := range []*string{&r.ID, &r.Tool, &r.Conversation} {
		f, next, err := nextField(rest)
		if err != nil {
			return Request{}, err
		}
		*s, rest = string(f), next
	}
	for _, v := range r.Limits.values() {
		if len(rest) < 8 {
			return Request{}, fmt.Errorf("%w: truncated limits", ErrMalformedResult)
		}
		*v, rest = int64(binary.LittleEndian.Uint64(rest)), rest[8:]
	}
	args, _, err := nextField(rest)
	if err != nil {
		return Request{}, err
	}
	r.Args = args
	return r, nil
}

func (l *Limits) values() []*int64 {
	return []*int64{&l.MaxOutputBytes, &l.AvailableCapacityBytes, &l.MaxFileReadBytes, &l.MaxScanBytes, &l.MaxPatchBytes}
}

// Limits are the per-call limits a plugin must respect (SRD 3.3, 6.5, 6.8).
type Limits struct {
	MaxOutputBytes         int64 `json:"max_output_bytes"`
	AvailableCapacityBytes int64 `json:"available_capacity_bytes"`
	MaxFileReadBytes       int64 `json:"max_file_read_bytes"`
	MaxScanBytes           int64 `json:"max_scan_bytes"`
	MaxPatchBytes          int64 `json:"max_patch_bytes"`
}

// DefaultLimits are the SRD's defaults (2.7, 3.3.1, 6.5, 6.8, 6.9). The
// configuration's defaults hold the same numbers; a test keeps them equal.
func DefaultLimits() Limits {
	return Limits{
		MaxOutputBytes:         100 << 10,
		AvailableCapacityBytes: 64 << 10,
		MaxFileReadBytes:       200 << 10,
		MaxScanBytes:           2 << 20,
		MaxPatchBytes:          512 << 10,
	}
}

// WithDefaults returns l with every limit it leaves at zero (or below)
// taken from DefaultLimits: a missing limit is the default, never none.
func (l Limits) WithDefaults() Limits {
	def := DefaultLimits()
	got, want := l.values(), def.values()
	for i, v := range got {
		if *v <= 0 {
			*v = *want[i]
		}
	}
	return l
}

// OutputLimit is min(max_output_bytes, available_capacity_bytes) (FR-OUT-04).
func (l Limits) OutputLimit() int64 { return minPositive(l.MaxOutputBytes, l.AvailableCapacityBytes) }

// ReadLimit is min(max_file_read_bytes, available_capacity_bytes) (3.6.8).
func (l Limits) ReadLimit() int64 { return minPositive(l.MaxFileReadBytes, l.AvailableCapacityBytes) }

func minPositive(a, b int64) int64 {
	switch {
	case a <= 0:
		return b
	case b <= 0 || a < b:
		return a
	}
	return b
}

// Result flags.
const (
	// ResultNoTruncate says the plugin limited its own output and the host
	// must not truncate it (FR-TOOL-READ-01b).
	ResultNoTruncate uint32 = 1 << iota
)

// Result is what the call and summary exports return. Kind is empty on
// success; Content is the output, or the error message.
type Result struct {
	Kind    ErrorKind
	Flags   uint32
	Content []byte
	Details []byte // JSON object or empty
	// Structured is a successful call's output as one JSON object, beside
	// Content (MCP's structuredContent), or empty. The host checks it like
	// Content: a plugin's word, never trusted as more than data.
	Structured []byte
}

// Result envelope layout, little-endian:
//
//	u32 magic "THR1" | u32 flags | u32 len + kind | u32 len + content | u32 len + details
//	[| u32 len + structured]
//
// The structured field came later: AppendResult writes it only when it is
// not empty, so a result without one is byte for byte what hosts that
// predate it decode, and DecodeResult reads a result with or without it.
const resultMagic = 0x31524854 // "THR1"

// AppendResult encodes r after dst.
func AppendResult(dst []byte, r Result) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, resultMagic)
	dst = binary.LittleEndian.AppendUint32(dst, r.Flags)
	dst = appendField(dst, []byte(r.Kind))
	dst = appendField(dst, r.Content)
	dst = appendField(dst, r.Details)
	if len(r.Structured) > 0 {
		dst = appendField(dst, r.Structured)
	}
	return dst
}

func appendField(dst, b []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

// ErrMalformedResult reports an envelope that does not follow its layout.
var ErrMalformedResult = errors.New("malformed result envelope")

// DecodeResult decodes a result envelope. The returned slices alias b.
func DecodeResult(b []byte) (Result, error) {
	if len(b) < 8 || binary.LittleEndian.Uint32(b) != resultMagic {
		return Result{}, fmt.Errorf("%w: bad header", ErrMalformedResult)
	}
	r := Result{Flags: binary.LittleEndian.Uint32(b[4:])}
	rest := b[8:]
	var kind []byte
	var err error
	for _, f := range []*[]byte{&kind, &r.Content, &r.Details} {
		if *f, rest, err = nextField(rest); err != nil {
			return Result{}, err
		}
	}
	if len(rest) != 0 {
		if r.Structured, rest, err = nextField(rest); err != nil {
			return Result{}, err
		}
		if len(r.Structured) == 0 {
			r.Structured = nil
		}
	}
	if len(rest) != 0 {
		return Result{}, fmt.Errorf("%w: %d trailing bytes", ErrMalformedResult, len(rest))
	}
	r.Kind = ErrorKind(kind)
	return r, nil
}

func nextField(b []byte) (field, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("%w: truncated length", ErrMalformedResult)
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, fmt.Errorf("%w: field of %d bytes exceeds envelope", ErrMalformedResult, n)
	}
	return b[4 : 4+n], b[4+n:], nil
}

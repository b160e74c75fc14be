package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Every field a step or a reads record carries comes back from the step
// log as it went in, and a damaged record is an error, never a panic.
func TestLogRecordRoundTrip(t *testing.T) {
	at := time.Unix(1_700_000_000, 123456789).UTC()
	full := Result{OK: true, Content: "é\x00" + strings.Repeat("x", 300), Truncated: true, ErrorKind: "k", ErrorMessage: "m", Finished: at}
	for _, tc := range []struct {
		name string
		rec  logRecord
	}{
		{"batch with a start", logRecord{Seq: 1, Batch: "b", Step: Step{At: at, Starts: []string{"c0"}, Batch: &Batch{
			ID: "b", Conversation: "conv", Turn: "t", Created: at, State: StateOpen,
			Calls: []Call{
				{ID: "c0", Tool: "read_file", Path: "/a", Arguments: json.RawMessage(`{"path":"a"}`), Disposition: "execute", Decision: Approved, DecidedBy: "me"},
				{ID: "c1", Tool: "write_file", Disposition: "deny", Result: &Result{ErrorKind: "denied", Finished: at}},
				{ID: "c2", Tool: "x", Result: &Result{}},
			},
		}}}},
		{"results, decisions, end", logRecord{Seq: 1 << 40, Batch: "b", Step: Step{
			Decisions: []CallDecision{{"c0", Denied, "user"}},
			Results:   []CallResult{{"c0", full}, {"c1", Result{}}},
			End:       true,
			At:        at,
		}}},
		{"empty step", logRecord{Seq: 2, Batch: "b"}},
		{"reads", logRecord{Seq: 3, Reads: &readsRecord{Conversation: "conv", Reads: []Read{{"/a", "ab", at}, {"/b", "", time.Time{}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			payload := appendRecord(nil, &tc.rec)
			got, err := decodeRecord(payload)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, tc.rec) {
				t.Errorf("decoded\n%+v\nwant\n%+v", got, tc.rec)
			}
			for n := range len(payload) {
				if _, err := decodeRecord(payload[:n]); err == nil {
					t.Errorf("a record cut to %d of %d bytes decoded without an error", n, len(payload))
				}
			}
		})
	}
}

// The JSON records of earlier versions are still replayed.
func TestLogRecordJSON(t *testing.T) {
	got, err := decodeRecord([]byte(`{"q":7,"b":"b1","s":{"Starts":["c0"],"End":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Seq != 7 || got.Batch != "b1" || !reflect.DeepEqual(got.Step.Starts, []string{"c0"}) || !got.Step.End {
		t.Errorf("decoded %+v", got)
	}
}

// A record's counts and lengths are the file's word, not the process's:
// a damaged or forged record that claims many items (up to 2^64, or as
// many as it has bytes) is an error, and decoding it allocates about what
// the record holds, not what it claims: a replay at startup must not be
// the way to exhaust the machine's memory.
func TestLogRecordHostileCounts(t *testing.T) {
	const size = 1 << 20
	junk := bytes.Repeat([]byte{0xff}, size) // no valid item begins here
	head := func(kind byte) []byte {
		p := binary.AppendUvarint([]byte{logBinary}, 1) // format, seq
		p = appendString(p, "b")
		return append(p, kind)
	}
	step := func(flags byte) []byte { return appendTime(append(head(kindStep), flags), time.Time{}) }
	batch := func() []byte {
		p := step(stepHasBatch)
		p = appendString(appendString(appendString(p, "b"), "conv"), "turn")
		return appendString(appendTime(p, time.Time{}), "open")
	}
	many := func(p []byte, n uint64) []byte { return append(binary.AppendUvarint(p, n), junk...) }
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"reads as many as its bytes", many(appendString(head(kindReads), "c"), size)},
		{"reads 2^64-1", many(appendString(head(kindReads), "c"), math.MaxUint64)},
		{"calls as many as its bytes", many(batch(), size)},
		{"decisions as many as its bytes", many(step(0), size)},
		{"results as many as its bytes", many(binary.AppendUvarint(step(0), 0), size)},
		{"starts as many as its bytes", many(binary.AppendUvarint(binary.AppendUvarint(step(0), 0), 0), size)},
		{"a string of 2^32-1 bytes", many(binary.AppendUvarint([]byte{logBinary}, 1), math.MaxUint32)},
		{"a seq past 64 bits", append([]byte{logBinary}, junk[:16]...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := decodeRecord(tc.payload)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Error("a forged record decoded without an error")
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 2*uint64(len(tc.payload))+64<<10 {
				t.Errorf("decoding a record of %d bytes allocated %d", len(tc.payload), got)
			}
		})
	}
}

// FuzzLogRecord feeds the decoder damaged records: none may panic, and
// what a record decodes to is written and read back the same.
func FuzzLogRecord(f *testing.F) {
	at := time.Unix(1_700_000_000, 5).UTC()
	for _, rec := range []logRecord{
		{Seq: 1, Batch: "b", Step: Step{At: at, Starts: []string{"c0"}, Batch: &Batch{ID: "b", Created: at,
			Calls: []Call{{ID: "c0", Tool: "t", Arguments: json.RawMessage(`{}`), Result: &Result{OK: true, Content: "x"}}}}}},
		{Seq: 2, Batch: "b", Step: Step{Decisions: []CallDecision{{"c0", Approved, "u"}}, Results: []CallResult{{"c0", Result{Finished: at}}}, End: true}},
		{Seq: 3, Reads: &readsRecord{Conversation: "c", Reads: []Read{{"/a", "ab", at}}}},
	} {
		f.Add(appendRecord(nil, &rec))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		rec, err := decodeRecord(payload)
		if err != nil || payload[0] == '{' {
			return
		}
		again, err := decodeRecord(appendRecord(nil, &rec))
		if err != nil || !reflect.DeepEqual(again, rec) {
			t.Errorf("%x decoded to\n%+v\nwritten and read back: %+v, %v", payload, rec, again, err)
		}
	})
}

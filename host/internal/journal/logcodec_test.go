package journal

import (
	"encoding/json"
	"reflect"
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

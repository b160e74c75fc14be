package journal

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FR-RES-01, FR-RES-01a, FR-RES-04a/b, NFR-REL-01: a
// batch is recorded whole with its calls in order, dispositions, decisions
// and pre-resolved results; each call starts and finishes once.
func TestBatchLifecycle(t *testing.T) {
	j := openJournal(t, Memory, Options{MaxResultBytes: 10})
	ctx := context.Background()
	b := testBatch("b1", 3)
	b.Calls[1].Disposition, b.Calls[2].Disposition = "confirm", "pre_resolved"
	b.Calls[2].Result = &Result{ErrorKind: "UnknownTool", ErrorMessage: "no tool frob"}
	mustDo(t, j.BeginBatch(ctx, b))
	mustDo(t, j.Decide(ctx, "b1", []CallDecision{{CallID: "b1-call-1", Verdict: Denied, By: "alice"}}))
	mustDo(t, j.StartCall(ctx, "b1", "b1-call-0", time.Time{}))
	mustDo(t, j.FinishCall(ctx, "b1", "b1-call-0", Result{OK: true, Content: "héééééééé"}))
	mustDo(t, j.FinishCall(ctx, "b1", "b1-call-1", Result{ErrorKind: "Denied", ErrorMessage: "denied by alice"}))
	mustDo(t, j.EndBatch(ctx, "b1"))

	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"batch again", j.BeginBatch(ctx, testBatch("b1", 1)), "already in the journal"},
		{"duplicate call ids", j.BeginBatch(ctx, Batch{ID: "b2", Calls: []Call{{ID: "x"}, {ID: "x"}}}), `call id "x" more than once`},
		{"second start", j.StartCall(ctx, "b1", "b1-call-0", time.Time{}), "already has a result"},
		{"second result", j.FinishCall(ctx, "b1", "b1-call-0", Result{OK: true}), "exactly one"},
		{"unknown call", j.StartCall(ctx, "b1", "nope", time.Time{}), `no call "nope"`},
		{"end twice", j.EndBatch(ctx, "b1"), "is done, not open"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, tc.err, tc.want)
		}
	}
	if _, err := j.Batch(ctx, "b2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused batch b2 is in the journal (%v): BeginBatch must be all or nothing", err)
	}

	got, err := j.Batch(ctx, "b1")
	mustDo(t, err)
	if got.State != StateDone || len(got.Calls) != 3 {
		t.Fatalf("batch %+v", got)
	}
	for i, c := range got.Calls {
		if c.ID != b.Calls[i].ID || c.Disposition != b.Calls[i].Disposition || string(c.Arguments) != string(b.Calls[i].Arguments) {
			t.Errorf("call %d = %+v, want %+v in call order", i, c, b.Calls[i])
		}
	}
	if c := got.Calls[0]; c.Started.IsZero() || c.Result.Content != "héééé" || !c.Result.Truncated {
		t.Errorf("call 0 = %+v %+v, want started, content cut to 10 bytes at a character boundary", c, c.Result)
	}
	if c := got.Calls[1]; c.Decision != Denied || c.DecidedBy != "alice" || !c.Started.IsZero() {
		t.Errorf("call 1 = %+v, want denied by alice, never started", c)
	}
	if c := got.Calls[2]; c.Result == nil || c.Result.ErrorKind != "UnknownTool" {
		t.Errorf("call 2 = %+v, want its pre-resolved result", c)
	}
}

// Pre-images are kept content-addressed, the first one
// per call and path wins, "did not exist" is kept, and a change larger
// than the cap is journaled as not undoable with the reason.
func TestPreimages(t *testing.T) {
	j := openJournal(t, Memory, Options{MaxPreimageBytes: 16})
	ctx := context.Background()
	mustDo(t, j.BeginBatch(ctx, testBatch("b1", 2)))
	small, big := []byte("old content"), bytes.Repeat([]byte("x"), 17)
	for _, tc := range []struct {
		p        Preimage
		undoable bool
	}{
		{Preimage{BatchID: "b1", CallID: "b1-call-0", Path: "/r/a", Exists: true, Mode: 0o640, Content: small}, true},
		{Preimage{BatchID: "b1", CallID: "b1-call-0", Path: "/r/a", Exists: true, Mode: 0o600, Content: []byte("second write")}, true},
		{Preimage{BatchID: "b1", CallID: "b1-call-0", Path: "/r/new", Exists: false}, true},
		{Preimage{BatchID: "b1", CallID: "b1-call-1", Path: "/r/b", Exists: true, Mode: 0o644, Content: small}, true},
		{Preimage{BatchID: "b1", CallID: "b1-call-1", Path: "/r/big", Exists: true, Mode: 0o644, Content: big}, false},
	} {
		undoable, err := j.RecordPreimage(ctx, tc.p)
		mustDo(t, err)
		if undoable != tc.undoable {
			t.Errorf("%s: undoable %v, want %v", tc.p.Path, undoable, tc.undoable)
		}
	}
	if _, err := j.RecordPreimage(ctx, Preimage{BatchID: "b1", CallID: "nope", Path: "/r/a"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("pre-image for an unknown call = %v, want ErrNotFound", err)
	}
	mustDo(t, j.RecordPostimage(ctx, "b1", "b1-call-0", "/r/a", Image{Exists: true, Mode: 0o640, Size: 3, SHA256: "abc"}))

	var blobs int
	mustDo(t, j.db.QueryRowContext(ctx, "SELECT count(*) FROM blobs").Scan(&blobs))
	if blobs != 1 {
		t.Errorf("%d blobs, want 1: the same content is stored once, a too large one not at all", blobs)
	}
	changes, err := j.Changes(ctx, "b1", "")
	mustDo(t, err)
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	if strings.Join(paths, " ") != "/r/a /r/new /r/b /r/big" {
		t.Errorf("changes %v, want in the order made", paths)
	}
	sum := sha256.Sum256(small)
	if a := changes[0]; a.Before.Mode != 0o640 || a.Before.SHA256 != hex.EncodeToString(sum[:]) || a.After == nil || a.After.SHA256 != "abc" {
		t.Errorf("change of /r/a = %+v, want the first pre-image (0640) and the post-image", a)
	}
	if changes[2].After != nil {
		t.Errorf("/r/b has a post-image %+v; none was recorded", changes[2].After)
	}
	if c := changes[3]; c.Undoable || !strings.Contains(c.Reason, "max_preimage_bytes") {
		t.Errorf("change of /r/big = %+v, want not undoable naming max_preimage_bytes", c)
	}

	if got, err := j.PreimageContent(ctx, "b1", "b1-call-0", "/r/a"); err != nil || string(got) != string(small) {
		t.Errorf("content of /r/a = %q, %v", got, err)
	}
	if got, err := j.PreimageContent(ctx, "b1", "b1-call-0", "/r/new"); err != nil || got != nil {
		t.Errorf("content of /r/new = %q, %v; want nil: it did not exist", got, err)
	}
	if _, err := j.PreimageContent(ctx, "b1", "b1-call-1", "/r/big"); err == nil || !strings.Contains(err.Error(), "cannot be undone") {
		t.Errorf("content of /r/big: %v, want it cannot be undone", err)
	}
}

// Prune removes finished batches older than the
// retention, their pre-images and content no other pre-image uses, and old
// reads; open and interrupted batches stay whatever their age.
func TestPrune(t *testing.T) {
	j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"), Options{Retention: 24 * time.Hour})
	ctx := context.Background()
	now := time.Now()
	old := now.Add(-48 * time.Hour)
	for _, b := range []struct {
		id      string
		created time.Time
		end     bool
		content string
	}{
		{"old-done", old, true, "only old"},
		{"old-open", old, false, "kept open"},
		{"old-shared", old, true, "shared"},
		{"new-done", now, true, "shared"},
	} {
		batch := testBatch(b.id, 1)
		batch.Created = b.created
		mustDo(t, j.BeginBatch(ctx, batch))
		_, err := j.RecordPreimage(ctx, Preimage{BatchID: b.id, CallID: b.id + "-call-0", Path: "/r/" + b.id, Exists: true, Content: []byte(b.content)})
		mustDo(t, err)
		if b.end {
			mustDo(t, j.EndBatch(ctx, b.id))
		}
	}
	mustDo(t, j.SaveReads(ctx, "c", []Read{{Path: "/r/old", SHA256: "1", ReadAt: old}, {Path: "/r/new", SHA256: "2", ReadAt: now}}))

	st, err := j.Prune(ctx, now)
	mustDo(t, err)
	if st != (PruneStats{Batches: 2, Blobs: 1, Reads: 1}) {
		t.Errorf("Prune = %+v, want 2 batches, 1 blob (the shared one stays), 1 read", st)
	}
	left, err := j.ListBatches(ctx, Filter{})
	mustDo(t, err)
	var ids []string
	for _, s := range left {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, " ") != "new-done old-open" {
		t.Errorf("left %v, want new-done old-open", ids)
	}
	var pre int
	mustDo(t, j.db.QueryRowContext(ctx, "SELECT count(*) FROM preimages").Scan(&pre))
	if pre != 2 {
		t.Errorf("%d pre-images left, want 2", pre)
	}
}

// The stale-file cache's records in the journal: saved
// in one transaction per conversation, the newer record of a path wins
// whichever order processes save them in, conversations are separate.
func TestReads(t *testing.T) {
	j := openJournal(t, Memory, Options{})
	ctx := context.Background()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	mustDo(t, j.SaveReads(ctx, "c1", []Read{{Path: "/r/a", SHA256: "a2", ReadAt: t0.Add(time.Minute)}, {Path: "/r/b", SHA256: "bb", ReadAt: t0}}))
	mustDo(t, j.SaveReads(ctx, "c1", []Read{{Path: "/r/a", SHA256: "a1", ReadAt: t0}})) // older: loses
	mustDo(t, j.SaveReads(ctx, "c2", []Read{{Path: "/r/a", SHA256: "zz", ReadAt: t0}}))
	mustDo(t, j.SaveReads(ctx, "c1", nil))
	list, err := j.ListReads(ctx, "c1")
	mustDo(t, err)
	want := []Read{{Path: "/r/a", SHA256: "a2", ReadAt: t0.Add(time.Minute)}, {Path: "/r/b", SHA256: "bb", ReadAt: t0}}
	if fmt.Sprint(list) != fmt.Sprint(want) {
		t.Errorf("ListReads(c1) = %+v, want %+v", list, want)
	}
	if list, _ := j.ListReads(ctx, "c3"); len(list) != 0 {
		t.Errorf("ListReads of a conversation that read nothing = %+v", list)
	}
}

// History lists batches by conversation and time, newest
// first; Export writes one tool.call and (when there is one) one
// tool.result event per line in the multi-agent toolset spec's shape.
func TestHistoryAndExport(t *testing.T) {
	j := openJournal(t, Memory, Options{})
	ctx := context.Background()
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, conv := range []string{"c1", "c2", "c1"} {
		b := testBatch(fmt.Sprintf("b%d", i), 2)
		b.Conversation, b.Created = conv, t0.Add(time.Duration(i)*time.Hour)
		mustDo(t, j.BeginBatch(ctx, b))
		mustDo(t, j.StartCall(ctx, b.ID, b.Calls[0].ID, b.Created.Add(time.Second)))
		mustDo(t, j.FinishCall(ctx, b.ID, b.Calls[0].ID, Result{OK: true, Content: "out", Finished: b.Created.Add(2 * time.Second)}))
		mustDo(t, j.StartCall(ctx, b.ID, b.Calls[1].ID, time.Time{}))
		mustDo(t, j.FinishCall(ctx, b.ID, b.Calls[1].ID, Result{ErrorKind: "Timeout", ErrorMessage: "took too long"}))
	}
	// A call whose arguments are not JSON still exports as one line.
	bad := Batch{ID: "b3", Conversation: "c3", Created: t0.Add(3 * time.Hour), Calls: []Call{{ID: "x", Tool: "t", Arguments: []byte(`{"unterminated`)}}}
	mustDo(t, j.BeginBatch(ctx, bad))

	for _, tc := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "b3 b2 b1 b0"},
		{Filter{Conversation: "c1"}, "b2 b0"},
		{Filter{Since: t0.Add(time.Hour)}, "b3 b2 b1"},
		{Filter{Limit: 1}, "b3"},
	} {
		got, err := j.ListBatches(ctx, tc.f)
		mustDo(t, err)
		var ids []string
		for _, s := range got {
			ids = append(ids, s.ID)
		}
		if strings.Join(ids, " ") != tc.want {
			t.Errorf("ListBatches(%+v) = %v, want %s", tc.f, ids, tc.want)
		}
	}

	var buf bytes.Buffer
	mustDo(t, j.Export(ctx, &buf, t0.Add(time.Hour)))
	var got []string
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		switch ev["type"] {
		case "tool.call":
			if _, ok := ev["params"]; !ok || ev["tool"] == nil || ev["timestamp"] == nil {
				t.Errorf("tool.call without tool, params or timestamp: %s", sc.Text())
			}
		case "tool.result":
			if ev["ok"] == true && ev["result"] == nil || ev["ok"] == false && ev["error"] == nil {
				t.Errorf("tool.result without its result or error: %s", sc.Text())
			}
		default:
			t.Errorf("event type %v", ev["type"])
		}
		got = append(got, fmt.Sprintf("%s %s", ev["type"], ev["tool_call_id"]))
	}
	want := []string{
		"tool.call b1-call-0", "tool.result b1-call-0", "tool.call b1-call-1", "tool.result b1-call-1",
		"tool.call b2-call-0", "tool.result b2-call-0", "tool.call b2-call-1", "tool.result b2-call-1",
		"tool.call x",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("export:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var first map[string]any
	json.Unmarshal([]byte(strings.SplitN(bufString(t, j, t0), "\n", 2)[0]), &first)
	if first["timestamp"] != "2025-01-02T03:04:06Z" || first["conversation_id"] != "c1" || first["batch_id"] != "b0" ||
		fmt.Sprint(first["params"]) != "map[path:f0.txt]" {
		t.Errorf("first event %v", first)
	}
}

func bufString(t *testing.T, j *Journal, since time.Time) string {
	var buf bytes.Buffer
	mustDo(t, j.Export(context.Background(), &buf, since))
	return buf.String()
}

// A step is one transaction. The engine folds a call's
// result and the next call's start into one; a step that fails anywhere
// records nothing of itself, so a start never lands without the results
// committed beside it, and a failed start leaves the earlier result unset
// rather than half a step applied.
func TestCommitStep(t *testing.T) {
	j := openJournal(t, Memory, Options{})
	ctx := context.Background()
	b := testBatch("s1", 3)
	mustDo(t, j.Commit(ctx, "s1", Step{Batch: &b, Starts: []string{"s1-call-0"}}))
	mustDo(t, j.Commit(ctx, "s1", Step{Results: []CallResult{{"s1-call-0", Result{OK: true, Content: "zero"}}}, Starts: []string{"s1-call-1"}}))

	for _, tc := range []struct {
		name string
		step Step
		want string
	}{
		{"unknown start", Step{Results: []CallResult{{"s1-call-1", Result{OK: true}}}, Starts: []string{"nope"}}, `no call "nope"`},
		{"start twice", Step{Results: []CallResult{{"s1-call-1", Result{OK: true}}}, Starts: []string{"s1-call-1"}}, "already has a result"},
		{"another batch", Step{Batch: &Batch{ID: "other"}}, "carries batch other"},
	} {
		err := j.Commit(ctx, "s1", tc.step)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.want)
		}
	}
	got, err := j.Batch(ctx, "s1")
	mustDo(t, err)
	if c := got.Calls[1]; c.Result != nil || c.Started.IsZero() {
		t.Errorf("call 1 = %+v, result %+v: a failed step must record none of its results", c, c.Result)
	}
	if c := got.Calls[0]; c.Result == nil || c.Result.Content != "zero" {
		t.Errorf("call 0 result = %+v, want the folded step's result", c.Result)
	}

	mustDo(t, j.Commit(ctx, "s1", Step{Results: []CallResult{{"s1-call-1", Result{OK: true}}, {"s1-call-2", Result{ErrorKind: "Denied"}}}, End: true}))
	got, err = j.Batch(ctx, "s1")
	mustDo(t, err)
	if got.State != StateDone || got.Calls[2].Result == nil || !got.Calls[2].Started.IsZero() {
		t.Errorf("batch %+v: want done, call 2 with a result and never started", got)
	}
}

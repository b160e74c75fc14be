package journal

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// Steps folded into their batch's first record leave the database as
// applying them one by one does: the same batches, states and times, the
// same calls with their decisions, starts and results.
func TestCoalesceWritesWhatStepsDo(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(1_700_000_000+int64(s), 0).UTC() }
	a := testBatch("a", 3)
	a.Created = at(0)
	a.Calls[1].Disposition = "confirm"
	a.Calls[2].Result = &Result{ErrorKind: "UnknownTool", ErrorMessage: "no tool", Finished: at(0)}
	b := testBatch("b", 2)
	b.Created = at(1)
	c := testBatch("c", 1)
	c.Created = at(0)
	ok := func(s string, sec int) Result { return Result{OK: true, Content: s, Finished: at(sec)} }
	first := []logRecord{
		{Seq: 1, Batch: "c", Step: Step{Batch: &c, Starts: []string{"c-call-0"}, At: at(0)}},
	}
	second := []logRecord{
		{Seq: 2, Batch: "a", Step: Step{Batch: &a, At: at(0)}},
		{Seq: 3, Batch: "a", Step: Step{Decisions: []CallDecision{{"a-call-1", Approved, "alice"}}, Starts: []string{"a-call-0"}, At: at(1)}},
		{Seq: 4, Reads: &readsRecord{Conversation: "conv-1", Reads: []Read{{"/f", "ab", at(1)}}}},
		{Seq: 5, Batch: "b", Step: Step{Batch: &b, Starts: []string{"b-call-0"}, At: at(2)}},
		{Seq: 6, Batch: "c", Step: Step{Results: []CallResult{{"c-call-0", ok("c0", 2)}}, End: true, At: at(2)}},
		{Seq: 7, Batch: "a", Step: Step{Results: []CallResult{{"a-call-0", ok("a0", 3)}}, Starts: []string{"a-call-1"}, At: at(3)}},
		{Seq: 8, Batch: "a", Step: Step{Results: []CallResult{{"a-call-1", Result{ErrorKind: "Timeout", Finished: at(4)}}}, End: true, At: at(4)}},
		{Seq: 9, Batch: "b", Step: Step{Results: []CallResult{{"b-call-0", ok("", 5)}}, At: at(5)}},
	}
	if got := len(coalesce(second)); got != 4 {
		t.Errorf("coalesce left %d of %d records, want 4 (a and b each folded, the reads, the step of c)", got, len(second))
	}
	dump := func(fold bool) [][]any {
		j := openJournal(t, filepath.Join(t.TempDir(), "journal.db"), Options{})
		ctx := context.Background()
		for _, recs := range [][]logRecord{first, second} {
			todo := recs
			if fold {
				todo = coalesce(recs)
			}
			mustDo(t, j.applyTx(ctx, "test.log", j.owner(), todo, recs[len(recs)-1].Seq))
		}
		return tableRows(t, j, `SELECT b.id, b.state, b.created_at, b.updated_at, c.seq, c.id, c.decision, c.decided_by,
			c.started_at, c.finished_at, c.ok, r.content, c.error_kind, c.error_message
			FROM batches b JOIN calls c ON c.batch_id = b.id LEFT JOIN results r ON r.n = c.result ORDER BY b.id, c.seq`)
	}
	one, folded := dump(false), dump(true)
	if !reflect.DeepEqual(one, folded) {
		t.Errorf("coalesced steps wrote\n%v\nstep by step\n%v", folded, one)
	}
	if len(one) != 6 {
		t.Errorf("%d calls journaled, want 6", len(one))
	}
}

func tableRows(t *testing.T, j *Journal, query string) [][]any {
	t.Helper()
	rs, err := j.db.QueryContext(context.Background(), query)
	mustDo(t, err)
	defer rs.Close()
	cols, err := rs.Columns()
	mustDo(t, err)
	var out [][]any
	for rs.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		mustDo(t, rs.Scan(ptrs...))
		for i, v := range row {
			if b, ok := v.([]byte); ok {
				row[i] = string(b)
			}
		}
		out = append(out, row)
	}
	mustDo(t, rs.Err())
	return out
}

package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/engine"
)

// A batch awaiting a decision counts its calls' approval views against
// the registry's budget, not only the arguments sent: past it a new one
// is refused; once decided, the views are let go and count no more.
func TestApprovalViewsCountAgainstBudget(t *testing.T) {
	r := newRegistry()
	r.maxBytes = 4 << 20
	view := func(id string) *batch {
		a := &engine.Approval{Confirmation: engine.Confirmation{CallID: "c1", Tool: "write_file"},
			Diff: &engine.Diff{Text: strings.Repeat("+x\n", 400<<10)}} // 1.2 MiB of diff
		b := newBatch(context.Background(), id, "conv", stateAwaiting, []callView{{ID: "c1", Name: "write_file", Disposition: engine.RequiresConfirmation, Approval: a}})
		b.argBytes = 100
		return b
	}
	var kept []*batch
	for i := range 4 {
		b := view("b" + string(rune('0'+i)))
		err := r.add(b)
		if i < 3 && err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if i == 3 {
			var full errTooManyBatches
			if !errors.As(err, &full) || !strings.Contains(err.Error(), "approval views") {
				t.Fatalf("a fourth batch of 1.2 MiB views in a 4 MiB budget: %v, want it refused saying what fills it", err)
			}
			break
		}
		kept = append(kept, b)
	}
	if b := kept[0]; b.views < 1200<<10 || b.kept != b.views+b.argBytes {
		t.Errorf("views %d, kept %d: the view's diff is not counted", b.views, b.kept)
	}
	before := r.bytes
	kept[0].finish(nil)
	if got := r.bytes; got > before-1200<<10 {
		t.Errorf("after the batch ended the registry counts %d bytes, was %d: its views were not given back", got, before)
	}
	if kept[0].calls[0].Approval != nil || kept[0].plan != nil {
		t.Error("a batch that ended still holds its view or its plan")
	}
	if err := r.add(view("b9")); err != nil {
		t.Errorf("a batch once the views were given back: %v", err)
	}
}

package hostile_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// A client names its calls as it likes, and a call id may be spelled
// like another call's journal id (BATCH.N): an agent copying ids it saw
// in results, or a client that wants its call mistaken for another. An
// operator who then names that id (toolhost undo ID, journal show ID)
// cannot tell which of the two calls it will reach: today the lookup
// picks the journal id's call silently. Refusing the id there as
// ambiguous would leave the operator no name at all for the first call
// (its journal id is the name the refusal offers), so the id is refused
// when the call is planned: a journal id is a name no client may take,
// except a call's own (an MCP call is named by its journal id).
func TestRedteamClientIDSpelledAsAnotherCallsJournalID(t *testing.T) {
	h, root := openHost(t, func(_ *config.Config, o *host.Options) { o.StateDir = t.TempDir() })
	ctx := context.Background()
	for _, f := range []string{"victim.txt", "mine.txt"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		read(t, h, f)
	}
	// The victim: an ordinary write, journaled as VICTIM.1.
	victim := engine.Batch{Conversation: "c", Calls: []engine.Call{write(t, "w", "victim.txt", "the operator's change\n")}}
	p, rs := h.Process(ctx, victim, host.BatchOptions{Approver: approveAll()})
	if !rs[0].OK {
		t.Fatalf("victim write: %+v", rs[0].Error)
	}
	victimID := journal.CallJournalID(p.Batch.ID, 1)
	// The forger: a call of another batch whose own id is VICTIM.1.
	forged := engine.Batch{Conversation: "c", Calls: []engine.Call{write(t, victimID, "mine.txt", "the forger's change\n")}}
	rs = process(t, h, ctx, forged, host.BatchOptions{Approver: approveAll()}, time.Minute)
	if !rs[0].OK {
		return
	}
	rep, err := h.Undo(ctx, victimID, host.UndoOptions{DryRun: true})
	if err != nil {
		t.Fatalf("a call id spelled as another call's journal id ran; undo %s then: %v", victimID, err)
	}
	t.Errorf("a call id spelled as another call's journal id (%s) ran: undo %s now reaches call %s, and nothing says another call has that id",
		victimID, victimID, rep.CallJournalID)
}

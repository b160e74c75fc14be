package main

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/journal"
)

// TestWriteCallPendingDecision: journal show of a call that awaits its
// decision says so, and that the arguments it shows are redacted, not
// what a person decides on; a call of an ended batch never asked says
// nobody was.
func TestWriteCallPendingDecision(t *testing.T) {
	c := journal.Call{ID: "c1", JournalID: "batch_0123456789abcdef.1", Tool: "run_command", Disposition: "confirm",
		Arguments: []byte(`{"command":"GITHUB_TOKEN=[REDACTED] true"}`)}
	for _, tc := range []struct {
		open bool
		want string
	}{
		{open: true, want: "none yet: it awaits one; the arguments below are redacted"},
		{open: true, want: "GET /v1/batches/batch_0123456789abcdef on the server holding it"},
		{open: false, want: "none (nobody was asked)"},
	} {
		var sb strings.Builder
		writeCall(&sb, c, false, tc.open)
		if !strings.Contains(sb.String(), tc.want) {
			t.Errorf("open %v: the call shows\n%s\nwant %q", tc.open, sb.String(), tc.want)
		}
	}
}

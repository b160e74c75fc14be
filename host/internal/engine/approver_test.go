package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

// An operator's standing approval (--allow) covers calls of its tools,
// never a call only a person may approve.
func TestPreapproved(t *testing.T) {
	cs := []Confirmation{
		{CallID: "1", Tool: "write_file"},
		{CallID: "2", Tool: "write_file", AlwaysAsk: true},
		{CallID: "3", Tool: "run_command"},
	}
	tests := []struct {
		tools    []string
		approved []string
		ask      []string
	}{
		{nil, nil, []string{"1", "2", "3"}},
		{[]string{"write_file"}, []string{"1"}, []string{"2", "3"}},
		{[]string{"write_file", "run_command"}, []string{"1", "3"}, []string{"2"}},
	}
	for _, tt := range tests {
		approved, ask := Preapproved(cs, tt.tools)
		var asked []string
		for _, c := range ask {
			asked = append(asked, c.CallID)
		}
		if !reflect.DeepEqual(approved, tt.approved) || !reflect.DeepEqual(asked, tt.ask) {
			t.Errorf("tools %v: approved %v, asked %v; want %v, %v", tt.tools, approved, asked, tt.approved, tt.ask)
		}
	}
}

// A call denied because no answer came is a SandboxViolation that says
// so in its reason (NotAsked); only an answer is reported as the kind
// DeniedByUser, so a client can tell the two apart.
func TestDenialReasonSaysWhoDecided(t *testing.T) {
	tests := []struct {
		name     string
		approver Approver
		kind     abi.ErrorKind
		details  string
	}{
		{"no approver", nil, abi.KindSandboxViolation, `"reason":"NotAsked"`},
		{"nobody to ask", ApproverFunc(func(context.Context, []Confirmation) (Decision, error) {
			return Unasked("policy: no terminal to ask on"), nil
		}), abi.KindSandboxViolation, `"reason":"NotAsked"`},
		{"asking failed", ApproverFunc(func(context.Context, []Confirmation) (Decision, error) {
			return Decision{}, errors.New("the terminal went away")
		}), abi.KindSandboxViolation, `"reason":"NotAsked"`},
		{"a person's no", ApproverFunc(func(context.Context, []Confirmation) (Decision, error) {
			return DenyAll("the user at the terminal"), nil
		}), abi.KindDeniedByUser, `"denied_by":"the user at the terminal"`},
		{"a person approved another call", ApproverFunc(func(context.Context, []Confirmation) (Decision, error) {
			return ApproveSelected("the user at the terminal", "2"), nil
		}), abi.KindDeniedByUser, `"denied_by":"the user at the terminal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, abi.Limits{})
			f.write(t, "a.txt", "old\n")
			f.read(t, "a.txt")
			b := Batch{Conversation: "c", Calls: []Call{{ID: "1", Name: "write_file", Arguments: json.RawMessage(`{"path":"a.txt","content":"new\n"}`)}}}
			_, rs := f.eng.Process(context.Background(), b, tt.approver, RunOptions{})
			if r := rs[0]; r.OK || r.Error == nil || r.Error.Kind != tt.kind || !strings.Contains(string(r.Error.Details), tt.details) {
				t.Errorf("result %+v, want kind %s with %s in its details", r.Error, tt.kind, tt.details)
			}
		})
	}
}

// Unanswerable names every call with its reason, each tool a standing
// approval could cover once, and the calls only a person may approve.
func TestUnanswerable(t *testing.T) {
	why, tools, personal := Unanswerable([]Confirmation{
		{CallID: "1", Tool: "write_file", Reason: "r1"},
		{CallID: "2", Tool: "apply_patch", Reason: "r2"},
		{CallID: "3", Tool: "write_file", Reason: "r3", AlwaysAsk: true},
		{CallID: "4", Tool: "write_file", Reason: "r4"},
	})
	if want := "; call 1 (write_file) needs approval: r1; call 2 (apply_patch) needs approval: r2; call 3 (write_file) needs approval: r3; call 4 (write_file) needs approval: r4"; why != want {
		t.Errorf("why %q, want %q", why, want)
	}
	if !reflect.DeepEqual(tools, []string{"apply_patch", "write_file"}) || !reflect.DeepEqual(personal, []string{"3"}) {
		t.Errorf("tools %v, personal %v", tools, personal)
	}
}

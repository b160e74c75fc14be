package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// FR-APR-04: a Policy built by hand with only some fields set is never
// less careful than its zero fields suggest: Policy{Mode: enabled} runs
// read-only tools and asks about side effects (it used to refuse every
// call, ApprovalEnabled being false), and unknown modes fail closed.
func TestPolicyZeroFieldsAreCautious_FR_APR_04(t *testing.T) {
	calls := []Call{
		call("r", "read_file", `{"path":"a.txt"}`),
		call("n", "write_file", `{"path":"new.txt","content":"x"}`),
		call("w", "write_file", `{"path":"a.txt","content":"x"}`),
		call("c", "run_command", `{"command":"true"}`),
	}
	tests := []struct {
		name string
		pol  Policy
		want string
	}{
		{"only the mode", Policy{Mode: ModeEnabled}, "execute,confirm,confirm,confirm"},
		{"only the approval mode", Policy{Approval: ApprovalPrompt}, "execute,confirm,confirm,confirm"},
		{"the zero policy is the default", Policy{}, "execute,execute,confirm,pre_resolved:SandboxViolation"},
		{"an unknown approval mode prompts", Policy{Approval: "prompts"}, "execute,confirm,confirm,confirm"},
		{"an unknown tools mode runs nothing", Policy{Mode: "enable"},
			"pre_resolved:SandboxViolation,pre_resolved:SandboxViolation,pre_resolved:SandboxViolation,pre_resolved:SandboxViolation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := policyFixture(t, tt.pol)
			p := f.eng.Plan(context.Background(), batch(calls...))
			if got := dispositions(p); got != tt.want {
				t.Errorf("dispositions %s, want %s", got, tt.want)
			}
			if r := p.Calls[0].Result; r != nil && !strings.Contains(r.Error.Message, "call r") {
				t.Errorf("refusal %q does not name the call", r.Error.Message)
			}
		})
	}
}

// A transport narrows the configured policy for one batch (a profile);
// no narrowing can widen it: a denied tool stays denied, a stricter
// approval mode or tools mode stays, a lower limit stays, parallel calls
// stay off (FR-APR-04b, FR-APR-05, FR-LIM-01, CFG-APR-01).
func TestNarrowingNeverWidens(t *testing.T) {
	read := call("r", "read_file", `{"path":"a.txt"}`)
	list := call("l", "list_directory", `{}`)
	write := call("w", "write_file", `{"path":"a.txt","content":"x"}`)
	cmd := call("c", "run_command", `{"command":"true"}`)
	tests := []struct {
		name   string
		policy func(*Policy)
		n      []Narrowing
		calls  []Call
		want   string
	}{
		// Attempts to widen change nothing.
		{"a denylisted tool stays denied", nil,
			[]Narrowing{{Tools: []string{"run_command"}, Approval: ApprovalAuto, Mode: ModeEnabled}}, []Call{cmd}, "pre_resolved:SandboxViolation"},
		{"deny mode stays deny", func(p *Policy) { p.Approval = ApprovalDeny },
			[]Narrowing{{Approval: ApprovalAuto}}, []Call{read, list}, "execute,pre_resolved:SandboxViolation"},
		{"prompt stays prompt", nil, []Narrowing{{Approval: ApprovalAuto}}, []Call{write}, "confirm"},
		{"parse_only stays parse_only", func(p *Policy) { p.Mode = ModeParseOnly }, []Narrowing{{Mode: ModeEnabled}}, []Call{read}, "pending"},
		{"disabled stays disabled", func(p *Policy) { p.Mode = ModeDisabled }, []Narrowing{{Mode: ModeEnabled}}, []Call{read}, "pre_resolved:SandboxViolation"},
		{"a lower batch limit stays", func(p *Policy) { p.MaxCallsPerBatch = 1 }, []Narrowing{{MaxCallsPerBatch: 10}}, []Call{read, list}, "execute,pre_resolved:SandboxViolation"},
		{"a later narrowing cannot restore a tool", nil,
			[]Narrowing{{Tools: []string{"read_file"}}, {Tools: []string{"read_file", "list_directory"}}}, []Call{read, list}, "execute,pre_resolved:SandboxViolation"},
		// Narrowing does narrow.
		{"only the profile's tools", nil, []Narrowing{{Tools: []string{"read_file"}}}, []Call{read, list}, "execute,pre_resolved:SandboxViolation"},
		{"more denied tools", nil, []Narrowing{{Deny: []string{"list_directory"}}}, []Call{read, list}, "execute,pre_resolved:SandboxViolation"},
		{"approval forced", nil, []Narrowing{{ConfirmAll: true}}, []Call{read, list}, "confirm,confirm"},
		{"auto becomes prompt", func(p *Policy) { p.Approval = ApprovalAuto }, []Narrowing{{Approval: ApprovalPrompt}}, []Call{write}, "confirm"},
		{"an unknown approval mode denies", nil, []Narrowing{{Approval: "paranoid"}}, []Call{read, list}, "execute,pre_resolved:SandboxViolation"},
		{"parse_only", nil, []Narrowing{{Mode: ModeParseOnly}}, []Call{read}, "pending"},
		{"a lower batch limit", nil, []Narrowing{{MaxCallsPerBatch: 1}}, []Call{read, list}, "execute,pre_resolved:SandboxViolation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := DefaultPolicy()
			if tt.policy != nil {
				tt.policy(&pol)
			}
			f := policyFixture(t, pol)
			p := f.eng.Plan(context.Background(), batch(tt.calls...), tt.n...)
			if got := dispositions(p); got != tt.want {
				t.Errorf("dispositions %s, want %s", got, tt.want)
			}
			for _, pc := range p.Calls {
				if pc.Result != nil && !strings.Contains(pc.Result.Error.Message, pc.Call.ID) && pc.Result.Error.Message != "Tool execution disabled by policy" {
					t.Errorf("refusal %q does not name call %s", pc.Result.Error.Message, pc.Call.ID)
				}
			}
		})
	}
}

// A narrowing applies through Process and to what is advertised, and it
// turns parallel calls off but never on.
func TestNarrowingInProcessAndAdvertised(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.AllowParallel = true }))
	n := Narrowing{Tools: []string{"read_file", "list_directory"}, Sequential: true}
	if got := manifestNames(f.eng.Advertised(n)); !slices.Equal(got, []string{"list_directory", "read_file"}) {
		t.Errorf("advertised %v", got)
	}
	calls := []Call{call("r1", "read_file", `{"path":"a.txt"}`), call("r2", "read_file", `{"path":"a.txt"}`), call("w", "write_file", `{"path":"n.txt","content":"x"}`)}
	p, results := f.eng.Process(context.Background(), batch(calls...), mustNotAsk(t), RunOptions{Narrowing: n})
	checkResults(t, calls, results)
	if !results[0].OK || !results[1].OK || results[2].OK || !strings.Contains(results[2].Error.Message, "not available to this batch") {
		t.Errorf("results %+v", results)
	}
	if p.parallel {
		t.Error("a Sequential narrowing left parallel calls on")
	}
	serial := policyFixture(t, DefaultPolicy())
	if p := serial.eng.Plan(context.Background(), batch(calls...), Narrowing{}); p.parallel {
		t.Error("a narrowing turned parallel calls on")
	}
	if got := fmt.Sprint(f.eng.Advertised()); got == fmt.Sprint(f.eng.Advertised(n)) {
		t.Error("the narrowing changed the engine's own policy")
	}
}

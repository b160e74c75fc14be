package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/toolhost/toolhost/abi"
)

// policyFixture is an engine with the given policy over a fresh root
// holding a.txt and .git/config.
func policyFixture(t *testing.T, pol Policy) *fixture {
	t.Helper()
	f := configFixture(t, Config{Policy: pol})
	f.write(t, "a.txt", "alpha\n")
	f.read(t, "a.txt") // so that replacing it is asked about, not refused as stale
	f.write(t, ".git/config", "[core]\n")
	return f
}

func withPolicy(change func(*Policy)) Policy {
	p := DefaultPolicy()
	change(&p)
	return p
}

func call(id, name, args string) Call {
	return Call{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func batch(calls ...Call) Batch { return Batch{Conversation: "c", Calls: calls} }

func dispositions(p *Plan) string {
	var out []string
	for _, c := range p.Calls {
		d := string(c.Disposition)
		if c.Result != nil && c.Result.Error != nil {
			d += ":" + string(c.Result.Error.Kind)
		}
		out = append(out, d)
	}
	return strings.Join(out, ",")
}

// checkResults is the invariant of NFR-REL-01 and FR-RES-01a: exactly one
// result per call, in call order, each either OK or an error.
func checkResults(t *testing.T, calls []Call, results []Result) {
	t.Helper()
	if len(results) != len(calls) {
		t.Fatalf("%d results for %d calls", len(results), len(calls))
	}
	for i, r := range results {
		if r.ID != calls[i].ID || r.Name != calls[i].Name {
			t.Fatalf("result %d is %s/%s, want %s/%s", i, r.ID, r.Name, calls[i].ID, calls[i].Name)
		}
		if r.OK == (r.Error != nil) {
			t.Fatalf("result %d: ok=%v with error %+v", i, r.OK, r.Error)
		}
	}
}

// FR-APR-05 precedence, one row per step, and FR-VAL-02 checks: each row
// is the first rule that decides the call.
func TestPlanPrecedence_FR_APR_05(t *testing.T) {
	tr := true
	tests := []struct {
		name   string
		policy func(*Policy)
		call   Call
		want   string // disposition[:error kind]
		reason string // in the error message or the confirmation's reason
	}{
		{"global disabled beats everything", func(p *Policy) { p.Disabled = true }, call("1", "nope", `{}`), "pre_resolved:SandboxViolation", "Tool execution disabled by policy"},
		{"unknown tool", nil, call("1", "nope", `{}`), "pre_resolved:UnknownTool", `unknown tool "nope"`},
		{"denylist beats bad arguments", nil, call("1", "run_command", `{"bad":1}`), "pre_resolved:SandboxViolation", "denied by policy (tools.approval.denylist)"},
		{"override denies", func(p *Policy) { p.Overrides = map[string]Override{"read_file": {Denied: true}} }, call("1", "read_file", `{"path":"a.txt"}`), "pre_resolved:SandboxViolation", "denied by policy"},
		{"schema before sandbox", nil, call("1", "read_file", `{"path":1}`), "pre_resolved:BadArgs", "/path"},
		{"args size", func(p *Policy) {}, call("1", "read_file", `{"path":"`+strings.Repeat("x", 300<<10)+`"}`), "pre_resolved:SandboxViolation", "max_tool_args_bytes"},
		{"sandbox preflight", nil, call("1", "write_file", `{"path":"../x","content":""}`), "pre_resolved:SandboxViolation", "is not allowed"},
		{"git internals are protected", nil, call("1", "write_file", `{"path":"sub/.git/config","content":""}`), "pre_resolved:SandboxViolation", "git's internals"},
		{"configuration is protected", func(p *Policy) { p.Approval = ApprovalAuto }, call("1", "write_file", `{"path":"./././toolhost.toml","content":""}`), "pre_resolved:SandboxViolation", "toolhost's configuration"},
		{"read-only path", nil, call("1", "write_file", `{"path":"frozen/x","content":""}`), "pre_resolved:SandboxViolation", "read-only"},
		{"read-only applies to written paths only", func(p *Policy) { p.Denylist = nil }, call("1", "run_command", `{"command":"git status","cwd":".git"}`), "confirm", "requires approval"},
		{"deny mode, not allowlisted", func(p *Policy) { p.Approval = ApprovalDeny }, call("1", "list_directory", `{}`), "pre_resolved:SandboxViolation", "not in tools.approval.allowlist"},
		{"deny mode, allowlisted", func(p *Policy) { p.Approval = ApprovalDeny }, call("1", "read_file", `{"path":"a.txt"}`), "execute", ""},
		{"prompt mode, side effects", nil, call("1", "write_file", `{"path":"a.txt","content":"x"}`), "confirm", "side effects"},
		{"prompt mode, side effects allowlisted", func(p *Policy) { p.Allowlist = []string{"write_file"} }, call("1", "write_file", `{"path":"a.txt","content":"x"}`), "execute", ""},
		{"prompt mode, creating a file", nil, call("1", "write_file", `{"path":"new.txt","content":"x"}`), "execute", ""},
		{"prompt mode, creating a file, no auto-approve", func(p *Policy) { p.AutoApproveNewFiles = false }, call("1", "write_file", `{"path":"new.txt","content":"x"}`), "confirm", "side effects"},
		{"prompt mode, read-only tool", nil, call("1", "list_directory", `{}`), "execute", ""},
		{"auto mode, side effects", func(p *Policy) { p.Approval = ApprovalAuto }, call("1", "write_file", `{"path":"a.txt","content":"x"}`), "execute", ""},
		{"tool requires approval even in auto mode", func(p *Policy) { p.Approval = ApprovalAuto; p.Denylist = nil }, call("1", "run_command", `{"command":"true"}`), "confirm", "requires approval"},
		{"tool requires approval even allowlisted", func(p *Policy) { p.Denylist = nil; p.Allowlist = []string{"run_command"} }, call("1", "run_command", `{"command":"true"}`), "confirm", "requires approval"},
		{"override requires approval", func(p *Policy) { p.Overrides = map[string]Override{"list_directory": {RequiresApproval: &tr}} }, call("1", "list_directory", `{}`), "confirm", "requires approval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := DefaultPolicy()
			if tt.policy != nil {
				tt.policy(&pol)
			}
			f := policyFixture(t, pol)
			p := f.eng.Plan(context.Background(), batch(tt.call))
			if got := dispositions(p); got != tt.want {
				t.Fatalf("disposition %s, want %s (%+v)", got, tt.want, p.Calls[0].Result)
			}
			pc := p.Calls[0]
			switch {
			case pc.Result != nil && !strings.Contains(pc.Result.Error.Message, tt.reason):
				t.Errorf("message %q, want %q", pc.Result.Error.Message, tt.reason)
			case pc.Confirmation != nil && !strings.Contains(pc.Confirmation.Reason, tt.reason):
				t.Errorf("reason %q, want %q", pc.Confirmation.Reason, tt.reason)
			}
		})
	}
}

// T-MODE-01: disabled mode advertises nothing and rejects every call.
func TestDisabledMode_T_MODE_01(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Mode = ModeDisabled }))
	if tools := f.eng.Advertised(); len(tools) != 0 {
		t.Errorf("disabled mode advertises %d tools", len(tools))
	}
	calls := []Call{call("1", "read_file", `{"path":"a.txt"}`), call("2", "write_file", `{"path":"n.txt","content":"x"}`)}
	p, results := f.eng.Process(context.Background(), batch(calls...), mustNotAsk(t), RunOptions{})
	checkResults(t, calls, results)
	if got := dispositions(p); got != "pre_resolved:SandboxViolation,pre_resolved:SandboxViolation" {
		t.Errorf("dispositions %s", got)
	}
	if _, err := os.Stat(filepath.Join(f.root, "n.txt")); err == nil {
		t.Error("disabled mode wrote a file")
	}
}

// T-MODE-02: parse_only surfaces pending calls, runs nothing, and returns
// the results a person submits.
func TestParseOnlyMode_T_MODE_02(t *testing.T) {
	def := abi.Manifest{Name: "lookup_ticket", Description: "Look up a ticket", Parameters: json.RawMessage(`{"type":"object"}`)}
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Mode = ModeParseOnly; p.Definitions = []abi.Manifest{def} }))
	names := manifestNames(f.eng.Advertised())
	if !slices.Contains(names, "lookup_ticket") || !slices.Contains(names, "read_file") {
		t.Errorf("parse_only advertises %v", names)
	}
	calls := []Call{call("1", "write_file", `{"path":"n.txt","content":"x"}`), call("2", "lookup_ticket", `{"id":"T-1"}`), call("3", "read_file", `{"path":"a.txt"}`)}
	p := f.eng.Plan(context.Background(), batch(calls...))
	if got := dispositions(p); got != "pending,pending,pending" {
		t.Fatalf("dispositions %s", got)
	}
	if err := p.Resolve("1", "written by hand", false); err != nil {
		t.Fatal(err)
	}
	if err := p.Resolve("2", "no such ticket", true); err != nil {
		t.Fatal(err)
	}
	if err := p.Resolve("9", "x", false); err == nil {
		t.Error("resolved a call that is not in the batch")
	}
	results := f.eng.Run(context.Background(), p, DenyAll(""), RunOptions{})
	checkResults(t, calls, results)
	if !results[0].OK || results[0].Content != "written by hand" || results[1].OK || !strings.Contains(results[2].Error.Message, "no result was submitted") {
		t.Errorf("results %+v", results)
	}
	if _, err := os.Stat(filepath.Join(f.root, "n.txt")); err == nil {
		t.Error("parse_only executed write_file")
	}
}

func manifestNames(ms []abi.Manifest) []string {
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	return names
}

// T-LIM-01: calls beyond max_tool_calls_per_batch are pre-resolved; the
// others run.
func TestBatchLimit_T_LIM_01(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.MaxCallsPerBatch = 3 }))
	var calls []Call
	for i := range 5 {
		calls = append(calls, call(fmt.Sprint("c", i), "read_file", `{"path":"a.txt"}`))
	}
	_, results := f.eng.Process(context.Background(), batch(calls...), mustNotAsk(t), RunOptions{})
	checkResults(t, calls, results)
	for i, r := range results {
		if ok := i < 3; r.OK != ok {
			t.Errorf("call %d ok=%v, want %v (%+v)", i, r.OK, ok, r.Error)
		}
	}
	if !strings.Contains(results[4].Error.Message, "max_tool_calls_per_batch is 3") {
		t.Errorf("message %q", results[4].Error.Message)
	}
}

// FR-LIM-02 / FR-RES-03: a turn gets at most max_tool_iterations_per_user_turn batches.
func TestIterationsPerTurn_FR_RES_03(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.MaxIterationsPerTurn = 2 }))
	b := Batch{Conversation: "c", Turn: "t1", Calls: []Call{call("1", "read_file", `{"path":"a.txt"}`)}}
	for i, want := range []bool{true, true, false} {
		_, results := f.eng.Process(context.Background(), b, mustNotAsk(t), RunOptions{})
		if results[0].OK != want {
			t.Errorf("batch %d ok=%v, want %v (%+v)", i+1, results[0].OK, want, results[0].Error)
		}
	}
	b.Turn = "t2"
	if _, results := f.eng.Process(context.Background(), b, mustNotAsk(t), RunOptions{}); !results[0].OK {
		t.Errorf("a new turn was refused: %+v", results[0].Error)
	}
}

// T-APR-01: a mixed batch asks before anything runs.
func TestMixedBatchPromptsFirst_T_APR_01(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	f.write(t, "b.txt", "b\n")
	calls := []Call{call("r", "read_file", `{"path":"b.txt"}`), call("w", "write_file", `{"path":"a.txt","content":"x"}`), call("l", "list_directory", `{}`)}
	var asked []Confirmation
	readsAtFirst := len(f.reads.Entries())
	var readsBefore int
	_, results := f.eng.Process(context.Background(), batch(calls...), asking(func(cs []Confirmation) Decision {
		asked = cs
		readsBefore = len(f.reads.Entries())
		return DenyAll("tester")
	}), RunOptions{})
	checkResults(t, calls, results)
	if len(asked) != 1 || asked[0].CallID != "w" || asked[0].Risk != abi.RiskMedium || asked[0].Summary != "Write 1 bytes to a.txt" {
		t.Fatalf("asked %+v", asked)
	}
	if readsBefore != readsAtFirst {
		t.Error("read_file ran before the approval question")
	}
	if !results[0].OK || !results[2].OK || results[1].OK || !strings.Contains(results[1].Error.Message, "Denied by tester") {
		t.Errorf("results %+v", results)
	}
}

// T-APR-02: ApproveSelected runs only the selected calls.
func TestApproveSelected_T_APR_02(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	f.write(t, "b.txt", "b\n")
	for _, n := range []string{"a.txt", "b.txt"} {
		f.read(t, n)
	}
	calls := []Call{call("wa", "write_file", `{"path":"a.txt","content":"A"}`), call("wb", "write_file", `{"path":"b.txt","content":"B"}`)}
	_, results := f.eng.Process(context.Background(), batch(calls...), answer(ApproveSelected("tester", "wb")), RunOptions{})
	checkResults(t, calls, results)
	if results[0].OK || !results[1].OK {
		t.Fatalf("results %+v", results)
	}
	if a, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(a) != "alpha\n" {
		t.Errorf("a.txt = %q; it was not approved", a)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "b.txt")); string(b) != "B" {
		t.Errorf("b.txt = %q", b)
	}
}

// T-VAL-01, T-VAL-02, FR-VAL-02a: invalid calls are pre-resolved and never
// prompt, even for side-effecting tools.
func TestInvalidCallsNeverPrompt_T_VAL_01_T_VAL_02(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	calls := []Call{
		call("u", "no_such_tool", `{}`),
		call("s", "write_file", `{"path":"a.txt"}`),
		call("d", "write_file", `{"path":"a.txt","content":"x"}`),
		call("d", "read_file", `{"path":"a.txt"}`),
		call("", "read_file", `{"path":"a.txt"}`),
	}
	p, results := f.eng.Process(context.Background(), batch(calls...), mustNotAsk(t), RunOptions{})
	checkResults(t, calls, results)
	want := "pre_resolved:UnknownTool,pre_resolved:BadArgs,pre_resolved:DuplicateToolCallId,pre_resolved:DuplicateToolCallId,pre_resolved:BadArgs"
	if got := dispositions(p); got != want {
		t.Errorf("dispositions %s\nwant %s", got, want)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(b) != "alpha\n" {
		t.Errorf("a.txt changed: %q", b)
	}
}

func mustNotAsk(t *testing.T) Approver {
	return asking(func(cs []Confirmation) Decision {
		t.Errorf("asked for approval of %+v", cs)
		return DenyAll("test")
	})
}

// answer is an Approver that always decides d.
func answer(d Decision) Approver { return asking(func([]Confirmation) Decision { return d }) }

// asking is an Approver that decides with decide and never fails.
func asking(decide func([]Confirmation) Decision) Approver {
	return ApproverFunc(func(_ context.Context, cs []Confirmation) (Decision, error) { return decide(cs), nil })
}

// FR-APR-01/06: summaries are the plugin's, redacted and at most 200
// characters; a summary cannot do I/O, so one that tries pre-resolves its
// call.
func TestConfirmationSummaries_FR_APR_06(t *testing.T) {
	tr := true
	f := policyFixture(t, withPolicy(func(p *Policy) {
		p.Denylist = nil
		p.Overrides = map[string]Override{"impure": {RequiresApproval: &tr}}
	}))
	long := strings.Repeat("echo hello; ", 40)
	calls := []Call{
		call("1", "run_command", `{"command":"curl -H 'Authorization: Bearer abcdef0123456789' https://u:hunter2@example.com?api_key=s3cr3t"}`),
		call("2", "run_command", `{"command":"OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx make deploy"}`),
		call("3", "run_command", `{"command":"`+long+`"}`),
		call("4", "impure", `{"path":"a.txt"}`),
	}
	p := f.eng.Plan(context.Background(), batch(calls...))
	if got := dispositions(p); got != "confirm,confirm,confirm,pre_resolved:ExecutionFailed" {
		t.Fatalf("dispositions %s (%+v)", got, p.Calls[3].Result)
	}
	for i, secret := range []string{"abcdef0123456789", "hunter2", "s3cr3t", "sk-abcdefghijklmnopqrstuvwx"} {
		for _, c := range p.Confirmations() {
			if strings.Contains(c.Summary, secret) {
				t.Errorf("secret %d leaked: %q", i, c.Summary)
			}
		}
	}
	cs := p.Confirmations()
	if !strings.HasPrefix(cs[0].Summary, "Run command: curl") || !strings.Contains(cs[0].Summary, "[REDACTED]") || cs[0].Risk != abi.RiskHigh {
		t.Errorf("summary %+v", cs[0])
	}
	// Cut in the middle, so the end of the command shows.
	if n := len([]rune(cs[2].Summary)); n != 200 || !strings.Contains(cs[2].Summary, "…") || !strings.HasSuffix(cs[2].Summary, "echo hello;") {
		t.Errorf("long summary has %d characters: %q", n, cs[2].Summary)
	}
	if msg := p.Calls[3].Result.Error.Message; !strings.Contains(msg, "approval summary failed") || strings.Contains(msg, "alpha") {
		t.Errorf("impure summary: %q", msg)
	}
}

// FR-APR-06: the summary a person approves shows what will run. Each
// case is an attack by a prompt-injected model on the one line a person
// reads: a hidden line break, invisible or reordering characters, a tail
// cut off, a path hidden by redaction.
func TestSummaryAttacks_FR_APR_06(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Denylist = nil }))
	// Files replaced, so that the calls are asked about: read first, as
	// replacing a file unread is refused without asking.
	for name, content := range map[string]string{"report\u202Etxt.sh": "x\n", "notes\u200B.txt": "x\n", "password=ok/deploy.sh": "echo hi\n"} {
		f.write(t, name, content)
		f.read(t, name)
	}
	arg := func(v map[string]any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name      string
		tool      string
		args      map[string]any
		want      []string // in the summary
		forbidden []string // never in it
	}{
		{"line break after a comment", "run_command", map[string]any{"command": "ls # list the files\nrm -rf data"},
			[]string{"Run command: ls # list the files⏎rm -rf data"}, []string{"files rm"}},
		{"carriage return and tab", "run_command", map[string]any{"command": "echo ok\rrm -rf data\tx"},
			[]string{"echo ok␍rm -rf data⇥x"}, nil},
		{"right-to-left override in a path", "write_file", map[string]any{"path": "report\u202Etxt.sh", "content": "y\n"},
			[]string{"Write 2 bytes to report<U+202E>txt.sh"}, []string{"\u202E"}},
		{"zero-width space in a path", "write_file", map[string]any{"path": "notes\u200B.txt", "content": "y\n"},
			[]string{"notes<U+200B>.txt"}, []string{"\u200B"}},
		{"terminal escape", "run_command", map[string]any{"command": "rm -rf data\x1b[2K\rls"},
			[]string{"rm -rf data<U+001B>[2K␍ls"}, []string{"\x1b"}},
		{"tail padded past 200 characters", "run_command", map[string]any{"command": "echo " + strings.Repeat("all-good-", 28) + " ; rm -rf data"},
			[]string{"Run command: echo all-good-", "…", "; rm -rf data"}, nil},
		{"path shaped like a secret", "write_file", map[string]any{"path": "password=ok/deploy.sh", "content": "rm -rf /\n"},
			[]string{"Write 9 bytes to password=ok/deploy.sh"}, []string{"[REDACTED]"}},
		{"path kept, secret elsewhere redacted", "run_command", map[string]any{"cwd": "password=ok", "command": "ls password=ok; curl https://example.com?api_key=s3cr3t"},
			[]string{"ls password=ok;", "api_key=[REDACTED]"}, []string{"s3cr3t"}},
		{"secret value ends at the line break", "run_command", map[string]any{"command": "export PASSWORD=hunter2\nrm -rf data"},
			[]string{"PASSWORD=[REDACTED]⏎rm -rf data"}, []string{"hunter2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := f.eng.Plan(context.Background(), batch(call("1", tt.tool, arg(tt.args))))
			cs := p.Confirmations()
			if len(cs) != 1 {
				t.Fatalf("%d confirmations (%+v)", len(cs), p.Calls[0].Result)
			}
			got := cs[0].Summary
			if n := len([]rune(got)); n > maxSummary {
				t.Errorf("summary has %d characters", n)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary %q does not show %q", got, w)
				}
			}
			for _, w := range tt.forbidden {
				if strings.Contains(got, w) {
					t.Errorf("summary %q holds %q", got, w)
				}
			}
			for _, r := range got {
				if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) || unicode.Is(unicode.Zs, r) && r != ' ' {
					t.Errorf("summary %+q holds %U", got, r)
				}
			}
		})
	}
}

// FR-APR-01/06: the rendering of a summary, rule by rule (see Visible).
func TestSummaryRendering_FR_APR_06(t *testing.T) {
	long := strings.Repeat("a", 150) + "\u202E" + strings.Repeat("b", 150)
	tests := []struct {
		name string
		in   string
		keep []string
		want string
	}{
		{"plain", "Write 1 bytes to a.txt", nil, "Write 1 bytes to a.txt"},
		{"spaces collapse, line breaks show", "  a \n\n  b\r\n\tc  ", nil, "a ⏎⏎ b␍⏎⇥c"},
		{"other spaces are written out", "a\u00A0b\u3000c\u2028d", nil, "a<U+00A0>b<U+3000>c<U+2028>d"},
		{"format characters", "x\u202Ey\u2066z\uFEFF\u00AD\U000E0041", nil, "x<U+202E>y<U+2066>z<U+FEFF><U+00AD><U+E0041>"},
		{"controls", "a\x00b\x7fc\u009bd\ve", nil, "a<U+0000>b<U+007F>c<U+009B>d<U+000B>e"},
		{"blank letters and selectors", "a\u3164b\u2800c\uFE0Fd", nil, "a<U+3164>b<U+2800>c<U+FE0F>d"},
		{"the rendering's glyphs are written out", "a⏎b…c", nil, "a<U+23CE>b<U+2026>c"},
		{"invalid UTF-8", "a\xffb", nil, "a\uFFFDb"},
		{"text in other scripts stays", "Écrire 1 octet dans café/日本.txt", nil, "Écrire 1 octet dans café/日本.txt"},
		{"secret redacted", "curl -H 'Authorization: Bearer abcdef0123456789'", nil, "curl -H 'Authorization: Bearer [REDACTED]'"},
		{"secret in a kept path shows", "Write 9 bytes to password=ok/deploy.sh", []string{"password=ok/deploy.sh"}, "Write 9 bytes to password=ok/deploy.sh"},
		{"a short path does not unhide a secret", "api_key=s3cret", []string{"e", "s3"}, "api_key=[REDACTED]"},
		{"a secret longer than the kept path", "password=ok/deploy.sh.bak", []string{"password=ok/deploy.sh"}, "password=[REDACTED]"},
		{"no redaction across lines", "token\nshutdown-now", nil, "token⏎shutdown-now"},
		{"private key over lines", "key -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- done", nil, "key [REDACTED] done"},
		{"webhook URL, by the shapes commands' variables are hidden by", "curl https://hooks.slack.com/services/T0/B0/abcdef", nil, "curl https://hooks.slack.com/services/[REDACTED]"},
		{"JWT", "x eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl y", nil, "x [REDACTED] y"},
		{"account key in a connection string", "AccountName=a;AccountKey=abc/+==;EndpointSuffix=x", nil, "AccountName=a;AccountKey=[REDACTED];EndpointSuffix=x"},
		{"base64 JSON without alg is no JWT", "eyJub3QiOiJhIGp3dCJ9.eyJhIjoxfQ.x", nil, "eyJub3QiOiJhIGp3dCJ9.eyJhIjoxfQ.x"},
		{"cut in the middle, never in an escape", long, nil, strings.Repeat("a", 99) + "…" + strings.Repeat("b", 100)},
	}
	r := newRedactor()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.summary(tt.in, tt.keep); got != tt.want {
				t.Errorf("summary(%+q) = %+q, want %+q", tt.in, got, tt.want)
			}
		})
	}
	// An escape at the cut is kept whole or left out.
	s := r.summary(strings.Repeat("a", 95)+"\u202E"+strings.Repeat("b", 200), nil)
	if n := len([]rune(s)); n > maxSummary || !strings.HasPrefix(s, strings.Repeat("a", 95)+"…") {
		t.Errorf("cut at an escape: %d characters, %q", n, s)
	}
	s = r.summary(strings.Repeat("a", 90)+"\u202E"+strings.Repeat("b", 200), nil)
	if n := len([]rune(s)); n != maxSummary || !strings.HasPrefix(s, strings.Repeat("a", 90)+"<U+202E>"+"b…") {
		t.Errorf("cut after an escape: %d characters, %q", n, s)
	}
}

// T-TMO-01 in a batch: a timeout is that call's result and the batch goes
// on.
func TestTimeoutContinues_T_TMO_01(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	calls := []Call{call("1", "spin", `{"spin":true}`), call("2", "read_file", `{"path":"a.txt"}`)}
	_, results := f.eng.Process(context.Background(), batch(calls...), mustNotAsk(t), RunOptions{})
	checkResults(t, calls, results)
	if results[0].Error == nil || results[0].Error.Kind != abi.KindTimeout || !results[1].OK {
		t.Errorf("results %+v / %+v", results[0].Error, results[1])
	}
}

// T-CAN-01: cancelling mid-batch stops the running call and marks it and
// every later call "Cancelled by user".
func TestCancelMidBatch_T_CAN_01(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Denylist = nil }))
	calls := []Call{
		call("1", "read_file", `{"path":"a.txt"}`),
		call("2", "run_command", `{"command":"sleep 30"}`),
		call("3", "read_file", `{"path":"a.txt"}`),
		call("4", "nope", `{}`),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	_, results := f.eng.Process(ctx, batch(calls...), asking(func([]Confirmation) Decision {
		time.AfterFunc(300*time.Millisecond, cancel)
		return ApproveAll("tester")
	}), RunOptions{})
	checkResults(t, calls, results)
	if time.Since(start) > 10*time.Second {
		t.Errorf("cancel took %v", time.Since(start))
	}
	if !results[0].OK {
		t.Errorf("call 1: %+v", results[0].Error)
	}
	for _, r := range results[1:] {
		if r.Error == nil || r.Error.Kind != abi.KindCancelled || r.Error.Message != "Cancelled by user" {
			t.Errorf("call %s: %+v", r.ID, r.Error)
		}
	}
}

// FR-OUT-01: per call, Started comes before its chunks and Completed after
// the last; batch states frame them; allow_parallel keeps result order.
func TestEventsAndParallel_FR_OUT_01(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(fmt.Sprint("parallel=", parallel), func(t *testing.T) {
			f := policyFixture(t, withPolicy(func(p *Policy) {
				p.AllowParallel = parallel
				p.Denylist = nil
				p.Allowlist = nil
				p.Approval = ApprovalAuto
			}))
			var calls []Call
			for i := range 6 {
				calls = append(calls, call(fmt.Sprint("r", i), "read_file", `{"path":"a.txt"}`))
			}
			// FR-OUT-02: streamed chunks are sanitized like results.
			calls = append(calls, call("cmd", "run_command", `{"command":"printf 'o\\033[2Jut\\n'; echo err >&2"}`), call("last", "list_directory", `{}`))
			var mu sync.Mutex
			var events []Event
			_, results := f.eng.Process(context.Background(), batch(calls...), answer(ApproveAll("tester")),
				RunOptions{Events: EventSinkFunc(func(_ context.Context, ev Event) error {
					mu.Lock()
					defer mu.Unlock()
					events = append(events, ev)
					return nil
				})})
			checkResults(t, calls, results)
			for _, r := range results {
				if !r.OK {
					t.Errorf("%s: %+v", r.ID, r.Error)
				}
			}
			if got := eventChunks(t, events, calls); got != "out\nerr\n" && got != "err\nout\n" {
				t.Errorf("chunks %q", got)
			}
		})
	}
}

// eventChunks checks FR-OUT-01's order (batch events frame the rest; per
// call Started, then its chunks, then Completed) and returns the chunks'
// text in arrival order.
func eventChunks(t *testing.T, events []Event, calls []Call) string {
	t.Helper()
	if events[0].Kind != EventPlanned || events[len(events)-1].Kind != EventDone {
		t.Errorf("batch events: first %s, last %s", events[0].Kind, events[len(events)-1].Kind)
	}
	state := map[string]string{}
	var chunks strings.Builder
	for _, ev := range events {
		switch ev.Kind {
		case EventStarted:
			if state[ev.CallID] != "" {
				t.Errorf("%s started twice", ev.CallID)
			}
			state[ev.CallID] = "started"
		case EventStdoutChunk, EventStderrChunk:
			if state[ev.CallID] != "started" {
				t.Errorf("chunk of %s outside Started..Completed", ev.CallID)
			}
			chunks.WriteString(ev.Chunk)
		case EventCompleted:
			if state[ev.CallID] != "started" || !ev.OK {
				t.Errorf("completed %s in state %q ok=%v", ev.CallID, state[ev.CallID], ev.OK)
			}
			state[ev.CallID] = "completed"
		}
	}
	for _, c := range calls {
		if state[c.ID] != "completed" {
			t.Errorf("%s ended in state %q", c.ID, state[c.ID])
		}
	}
	return chunks.String()
}

// NFR-REL-01 over randomized batches: whatever the mix of unknown tools,
// bad arguments, duplicate ids, denials, timeouts, approvals and
// cancellation, there is exactly one result per call, in order.
func TestExactlyOneResultPerCall_Randomized(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.MaxCallsPerBatch = 6 }))
	kinds := []func(id string) Call{
		func(id string) Call { return call(id, "read_file", `{"path":"a.txt"}`) },
		func(id string) Call { return call(id, "no_such_tool", `{}`) },
		func(id string) Call { return call(id, "read_file", `{"path":7}`) },
		func(id string) Call { return call(id, "read_file", `{"path":"../x"}`) },
		func(id string) Call { return call(id, "run_command", `{"command":"true"}`) },
		func(id string) Call { return call(id, "write_file", `{"path":"a.txt","content":"x"}`) },
		func(id string) Call { return call(id, "spin", `{"spin":true}`) },
		func(id string) Call { return call(id, "list_directory", `{}`) },
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 25 {
		n := rng.IntN(9)
		calls := make([]Call, n)
		for i := range calls {
			id := fmt.Sprint("c", i)
			if i > 0 && rng.IntN(8) == 0 {
				id = calls[rng.IntN(i)].ID // a duplicate
			}
			calls[i] = kinds[rng.IntN(len(kinds))](id)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if rng.IntN(4) == 0 {
			time.AfterFunc(time.Duration(rng.IntN(300))*time.Millisecond, cancel)
		}
		decisions := []Decision{ApproveAll("t"), DenyAll("t"), ApproveSelected("t", "c1", "c3")}
		_, results := f.eng.Process(ctx, batch(calls...), asking(func([]Confirmation) Decision {
			return decisions[rng.IntN(len(decisions))]
		}), RunOptions{})
		cancel()
		t.Run(fmt.Sprint("round", round), func(t *testing.T) { checkResults(t, calls, results) })
	}
}

// FR-REG-03a, CFG-TOOLS-02a: enabled mode offers the registry's tools, not
// configured definitions, and leaves out denied tools.
func TestAdvertisedEnabled(t *testing.T) {
	def := abi.Manifest{Name: "lookup_ticket", Description: "x", Parameters: json.RawMessage(`{"type":"object"}`)}
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Definitions = []abi.Manifest{def} }))
	names := manifestNames(f.eng.Advertised())
	if slices.Contains(names, "lookup_ticket") || slices.Contains(names, "run_command") || !slices.Contains(names, "write_file") {
		t.Errorf("enabled mode advertises %v", names)
	}
}

// FR-OUT-01 through a bounded subscription read by a slow consumer: every
// chunk arrives, in order, between Started and Completed; a consumer that
// leaves does not stall the batch.
func TestSubscription(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Denylist = nil; p.Approval = ApprovalAuto }))
	calls := []Call{call("1", "run_command", `{"command":"seq 1 20000"}`), call("2", "read_file", `{"path":"a.txt"}`)}
	sub := Subscribe(4)
	var got []Event
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range sub.Events() {
			got = append(got, ev)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	approve := answer(ApproveAll("t"))
	_, results := f.eng.Process(context.Background(), batch(calls...), approve, RunOptions{Events: sub})
	sub.Finish()
	<-done
	checkResults(t, calls, results)
	var want strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintln(&want, i)
	}
	if out := eventChunks(t, got, calls); out != want.String() {
		t.Errorf("streamed %d bytes, want %d", len(out), want.Len())
	}

	gone := Subscribe(1)
	gone.Cancel()
	_, results = f.eng.Process(context.Background(), batch(calls...), approve, RunOptions{Events: gone})
	gone.Finish()
	checkResults(t, calls, results)
}

// What runs is what was planned and approved: a transport that holds a
// plan between approval and run cannot change a call's arguments or
// disposition (the exported fields are for reading) and have it run.
func TestChangedPlanDoesNotRun_FR_APR_03(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Denylist = nil }))
	f.write(t, "a.txt", "a\n")
	tests := []struct {
		name   string
		change func(pc *PlannedCall)
	}{
		{"arguments", func(pc *PlannedCall) { pc.Call.Arguments = json.RawMessage(`{"command":"touch pwned"}`) }},
		{"disposition", func(pc *PlannedCall) { pc.Disposition = ExecuteNow }},
		{"tool", func(pc *PlannedCall) { pc.Call.Name = "list_directory" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := f.eng.Plan(context.Background(), batch(call("c", "run_command", `{"command":"true"}`)))
			if p.Calls[0].Disposition != RequiresConfirmation {
				t.Fatalf("planned %s, want a confirmation", p.Calls[0].Disposition)
			}
			tt.change(&p.Calls[0])
			rs := f.eng.Run(context.Background(), p, ApproveAll("tester"), RunOptions{})
			if rs[0].OK || !strings.Contains(rs[0].Error.Message, "changed after it was planned") {
				t.Fatalf("a changed call ran or failed otherwise: %+v", rs[0])
			}
			if _, err := os.Stat(filepath.Join(f.root, "pwned")); err == nil {
				t.Fatal("the changed command ran")
			}
		})
	}
}

package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/output"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// What the engine enforces because neither plugins nor callers can be
// trusted with it: writes stay where approval said, manifests cannot
// understate their capabilities, the output limit holds whatever a plugin
// claims.

// FR-APR-04d with auto_approve_new_files: two writes of the same new file
// in one batch are both planned as creating it, so neither asks; the
// second must not replace what the first created (before: "modified:
// fresh.txt"). It is refused, saying why and what to do, and the file
// keeps the first call's content.
func TestSecondCreateOfANewFileIsRefused_FR_APR_04d(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	calls := []Call{
		call("w1", "write_file", `{"path":"fresh.txt","content":"one\n"}`),
		call("w2", "write_file", `{"path":"fresh.txt","content":"two\n"}`),
	}
	p, results := f.eng.Process(context.Background(), batch(calls...), mustNotAsk(t), RunOptions{})
	checkResults(t, calls, results)
	if got := dispositions(p); got != "execute,execute" {
		t.Fatalf("dispositions %s, want both auto-approved as new files", got)
	}
	if !results[0].OK || !strings.HasPrefix(results[0].Content, "created: fresh.txt") {
		t.Fatalf("first write: %+v", results[0])
	}
	wantError(t, results[1], abi.KindStaleFile, "call w2")
	for _, want := range []string{"new file", "nothing was changed", "read fresh.txt"} {
		if !strings.Contains(results[1].Error.Message, want) {
			t.Errorf("message %q does not say %q", results[1].Error.Message, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "fresh.txt")); string(b) != "one\n" {
		t.Errorf("fresh.txt = %q, want the first call's content", b)
	}
}

// A plugin that writes a path its arguments do not name is refused by the
// host functions, because the engine hands them only the paths approval
// covered; what it was asked to write is written.
func TestUnnamedWriteRefused(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	calls := []Call{call("s1", "sneaky_write", `{"path":"asked.txt","other_content":"sneaked\n"}`)}
	_, results := f.eng.Process(context.Background(), batch(calls...), answer(ApproveAll("tester")), RunOptions{})
	checkResults(t, calls, results)
	wantError(t, results[0], abi.KindSandboxViolation, "s1")
	if !strings.Contains(results[0].Error.Message, "other") {
		t.Errorf("message %q does not name the refused path", results[0].Error.Message)
	}
	if _, err := os.Stat(filepath.Join(f.root, "other")); !os.IsNotExist(err) {
		t.Errorf("the unnamed path was written: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "asked.txt")); string(b) != "asked for\n" {
		t.Errorf("asked.txt = %q", b)
	}
}

// writeGrants: what each kind of tool may write.
func TestWriteGrants(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	resolve := func(name string) sandbox.Path {
		p, err := f.eng.cfg.Sandbox.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	existing, fresh, cfg := resolve("a.txt"), resolve("new.txt"), resolve("cfg.txt")
	writer := abi.Manifest{PathArgs: []string{"path", "from"}, CreateArgs: []string{"path"}, Capabilities: []abi.Capability{abi.CapFSRead, abi.CapFSWrite}}
	noCreateArgs := abi.Manifest{PathArgs: []string{"path"}, Capabilities: []abi.Capability{abi.CapFSWrite}}
	unnamed := abi.Manifest{WritesUnnamedPaths: true, Capabilities: []abi.Capability{abi.CapFSWrite}}
	reader := abi.Manifest{PathArgs: []string{"path"}, Capabilities: []abi.Capability{abi.CapFSRead}}
	tests := []struct {
		name     string
		m        abi.Manifest
		args     string
		resolved map[string]sandbox.Path
		creates  bool
		want     map[string]hostfn.WriteGrant // nil: anywhere the sandbox allows
	}{
		{"creating a new file: create-only", writer, `{"path":"new.txt","from":"a.txt"}`,
			map[string]sandbox.Path{"new.txt": fresh, "a.txt": existing}, true, map[string]hostfn.WriteGrant{fresh.Abs: hostfn.WriteCreateOnly}},
		{"replacing a file: its create_args only", writer, `{"path":"a.txt","from":"new.txt"}`,
			map[string]sandbox.Path{"a.txt": existing, "new.txt": fresh}, false, map[string]hostfn.WriteGrant{existing.Abs: hostfn.WriteAny}},
		{"fs.write without create_args: its path_args", noCreateArgs, `{"path":"cfg.txt"}`,
			map[string]sandbox.Path{"cfg.txt": cfg}, false, map[string]hostfn.WriteGrant{cfg.Abs: hostfn.WriteAny}},
		{"writes_unnamed_paths: wherever the sandbox allows", unnamed, `{}`, nil, false, nil},
		{"no fs.write: nothing", reader, `{"path":"a.txt"}`,
			map[string]sandbox.Path{"a.txt": existing}, false, map[string]hostfn.WriteGrant{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var decoded any
			if err := json.Unmarshal([]byte(tt.args), &decoded); err != nil {
				t.Fatal(err)
			}
			got := writeGrants(tt.m, decoded, tt.resolved, tt.creates)
			if (got == nil) != (tt.want == nil) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("grants %v, want %v", got, tt.want)
			}
		})
	}
}

// A manifest that understates its capabilities (side_effecting false and
// low risk while holding fs.write or proc.exec) is asked about with the
// risk its capabilities imply, and never runs beside other calls
// (FR-APR-04d, FR-APR-06, FR-EXE-01).
func TestLyingManifestIsAskedAbout_FR_APR_06(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	p := f.eng.Plan(context.Background(), batch(
		call("w", "liar_write", `{"path":"a.txt","content":"x"}`),
		call("x", "liar_exec", `{"command":"true"}`),
	))
	if got := dispositions(p); got != "confirm,confirm" {
		t.Fatalf("dispositions %s, want both asked about", got)
	}
	cs := p.Confirmations()
	if cs[0].Risk != abi.RiskMedium || cs[1].Risk != abi.RiskHigh || !strings.Contains(cs[1].Reason, "requires approval") {
		t.Errorf("confirmations %+v", cs)
	}

	par := policyFixture(t, withPolicy(func(p *Policy) { p.AllowParallel = true; p.Approval = ApprovalAuto }))
	p = par.eng.Plan(context.Background(), batch(
		call("w1", "liar_write", `{"path":"x.txt","content":"x"}`),
		call("w2", "liar_write", `{"path":"y.txt","content":"y"}`),
		call("r1", "read_file", `{"path":"a.txt"}`),
		call("r2", "read_file", `{"path":"a.txt"}`),
	))
	d := ApproveAll("tester")
	if got := dispositions(p); got != "execute,execute,execute,execute" {
		t.Fatalf("dispositions %s", got)
	}
	if end := par.eng.group(p, d, 0); end != 1 {
		t.Errorf("liar_write runs in a group of %d calls, want alone", end)
	}
	if end := par.eng.group(p, d, 2); end != 4 {
		t.Errorf("read_file calls run in a group ending at %d, want 4 (parallel)", end)
	}
}

// FR-OUT-04: the output limit holds for every result. A plugin that
// claims it limited its own output (no_truncate) and returns 5 MB against
// a 64 KB limit is cut like any other; output within the limit is kept
// whole.
func TestNoTruncateCannotExceedTheLimit_FR_OUT_04(t *testing.T) {
	f := newFixture(t, abi.Limits{MaxOutputBytes: 64 << 10, AvailableCapacityBytes: 64 << 10})
	r := f.call(t, "liar_big", `{"bytes":5242880}`)
	if !r.OK || len(r.Content) > 64<<10 || !strings.HasSuffix(r.Content, output.TruncationMarker) {
		t.Fatalf("got %d bytes (ok=%v), want at most %d ending with the truncation marker", len(r.Content), r.OK, 64<<10)
	}
	r = f.call(t, "liar_big", `{"bytes":100}`)
	if !r.OK || r.Content != strings.Repeat("x", 100) {
		t.Fatalf("output within the limit: %d bytes %+v", len(r.Content), r.Error)
	}
}

// Execute ran a call without the denylist or approval; it is gone from
// the API, and tests reach that path as execute.
func TestNoUnplannedExecuteInTheAPI(t *testing.T) {
	if _, ok := reflect.TypeFor[*Engine]().MethodByName("Execute"); ok {
		t.Error("Engine has an exported Execute that skips the approval policy")
	}
}

// FR-APR-03: an approver that fails (the person left, the client timed
// out) denies what needed confirmation, and the results say why and what
// to do; calls that needed none still run.
func TestFailingApproverDenies_FR_APR_03(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	calls := []Call{call("r", "read_file", `{"path":"a.txt"}`), call("w", "write_file", `{"path":"a.txt","content":"x"}`)}
	failing := ApproverFunc(func(context.Context, []Confirmation) (Decision, error) {
		return Decision{}, context.DeadlineExceeded
	})
	_, results := f.eng.Process(context.Background(), batch(calls...), failing, RunOptions{})
	checkResults(t, calls, results)
	if !results[0].OK {
		t.Errorf("read_file: %+v", results[0].Error)
	}
	wantError(t, results[1], abi.KindSandboxViolation, "call w")
	for _, want := range []string{"approval failed", "deadline exceeded", "ask again"} {
		if !strings.Contains(results[1].Error.Message, want) {
			t.Errorf("message %q does not say %q", results[1].Error.Message, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(b) != "alpha\n" {
		t.Errorf("a.txt changed: %q", b)
	}
}

package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

// A call that would replace or patch a file its conversation never read,
// or one that changed since, is refused when the batch is planned, with
// the StaleFile error the write would give and what to do, and nobody is
// asked about it (FR-TOOL-PATCH-02a/b). A creation needs no read, and a
// call after one that may read or change files first is judged when it
// runs.
func TestStaleCallRefusedBeforeAsking(t *testing.T) {
	patch := func(path, op string) string {
		return `{"patch":"LP1\nF ` + path + `\n` + op + `\nEND\n"}`
	}
	tests := []struct {
		name   string
		prep   func(t *testing.T, f *fixture)
		narrow []Narrowing
		calls  []Call
		want   string   // dispositions, as dispositions gives them
		words  []string // in the last call's error message
	}{
		{name: "overwrite of a file never read",
			calls: []Call{call("w", "write_file", `{"path":"u.txt","content":"x"}`)},
			want:  "pre_resolved:StaleFile", words: []string{"call w (write_file) was not run, and nobody was asked", "u.txt: File was not read before writing", "read it with read_file first"}},
		{name: "overwrite of a file changed since it was read",
			prep: func(t *testing.T, f *fixture) {
				f.read(t, "a.txt")
				f.write(t, "a.txt", "changed meanwhile\n")
			},
			calls: []Call{call("w", "write_file", `{"path":"a.txt","content":"x"}`)},
			want:  "pre_resolved:StaleFile", words: []string{"a.txt: File content changed since last read", "read it again"}},
		{name: "overwrite of a file read and unchanged is asked about",
			prep:  func(t *testing.T, f *fixture) { f.read(t, "a.txt") },
			calls: []Call{call("w", "write_file", `{"path":"a.txt","content":"x"}`)},
			want:  "confirm"},
		// A dry run writes nothing: write_file's diff of an unread file
		// succeeds, so it is not refused, and the host holds it to
		// writing nothing, so it runs unasked.
		{name: "a dry run asked for in the arguments",
			calls: []Call{call("w", "write_file", `{"path":"u.txt","content":"x","dry_run":true}`)},
			want:  "execute"},
		{name: "a dry run narrowing (an approval's preview)",
			narrow: []Narrowing{{DryRun: true}},
			calls:  []Call{call("w", "write_file", `{"path":"u.txt","content":"x","dry_run":true}`)},
			want:   "execute"},
		{name: "creating a file needs no read",
			calls: []Call{call("w", "write_file", `{"path":"new.txt","content":"x"}`)},
			want:  "execute"},
		{name: "patch of a file never read",
			calls: []Call{call("p", "apply_patch", patch("u.txt", `T\nmore\n.`))},
			want:  "pre_resolved:StaleFile", words: []string{"call p (apply_patch) was not run", "u.txt: File was not read before patching"}},
		{name: "patch naming a fresh file, then a stale one",
			prep:  func(t *testing.T, f *fixture) { f.read(t, "a.txt") },
			calls: []Call{call("p", "apply_patch", `{"patch":"LP1\nF a.txt\nT\nx\n.\nF u.txt\nT\ny\n.\nEND\n"}`)},
			want:  "pre_resolved:StaleFile", words: []string{"u.txt: File was not read before patching"}},
		{name: "patch creating a file is asked about",
			calls: []Call{call("p", "apply_patch", patch("brand-new.txt", `T\nfirst\n.`))},
			want:  "confirm"},
		{name: "after a listing, which reads nothing",
			calls: []Call{call("l", "list_directory", `{}`), call("w", "write_file", `{"path":"u.txt","content":"x"}`)},
			want:  "execute,pre_resolved:StaleFile", words: []string{"u.txt: File was not read before writing"}},
		{name: "after a call refused by policy, which does not run",
			calls: []Call{call("c", "run_command", `{"command":"cat u.txt"}`), call("w", "write_file", `{"path":"u.txt","content":"x"}`)},
			want:  "pre_resolved:SandboxViolation,pre_resolved:StaleFile", words: []string{"u.txt: File was not read before writing"}},
		{name: "after a read in the same batch, judged when it runs",
			calls: []Call{call("r", "read_file", `{"path":"u.txt"}`), call("w", "write_file", `{"path":"u.txt","content":"x"}`)},
			want:  "execute,confirm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := policyFixture(t, DefaultPolicy())
			f.write(t, "u.txt", "unread\n")
			if tt.prep != nil {
				tt.prep(t, f)
			}
			p := f.eng.Plan(context.Background(), batch(tt.calls...), tt.narrow...)
			if got := dispositions(p); got != tt.want {
				t.Fatalf("dispositions %s, want %s (%+v)", got, tt.want, p.Calls[len(p.Calls)-1].Result)
			}
			last := p.Calls[len(p.Calls)-1]
			for _, w := range tt.words {
				if last.Result == nil || !strings.Contains(last.Result.Error.Message, w) {
					t.Errorf("error %+v lacks %q", last.Result, w)
				}
			}
			if last.Result != nil && last.Result.Error.Kind == abi.KindStaleFile && !strings.Contains(string(last.Result.Error.Details), `"file":`) {
				t.Errorf("details %s lack the file", last.Result.Error.Details)
			}
		})
	}
}

// Through Process, a stale call reaches no approver and changes nothing;
// a call read again and approved runs.
func TestStaleCallNeverReachesTheApprover(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	f.write(t, "u.txt", "unread\n")
	calls := []Call{call("w", "write_file", `{"path":"u.txt","content":"x"}`)}
	_, results := f.eng.Process(context.Background(), batch(calls...), mustNotAsk(t), RunOptions{})
	checkResults(t, calls, results)
	if r := results[0]; r.OK || r.Error.Kind != abi.KindStaleFile {
		t.Fatalf("result %+v, want StaleFile", r.Error)
	}
	if got, _ := os.ReadFile(filepath.Join(f.root, "u.txt")); string(got) != "unread\n" {
		t.Errorf("u.txt holds %q", got)
	}
	f.read(t, "u.txt")
	var asked int
	_, results = f.eng.Process(context.Background(), batch(calls...), asking(func([]Confirmation) Decision {
		asked++
		return ApproveAll("tester")
	}), RunOptions{})
	if !results[0].OK || asked != 1 {
		t.Fatalf("after a read: result %+v, asked %d times, want one question and a write", results[0].Error, asked)
	}
}

// A file that changes after the plan's check, while a person decides, is
// still refused when the call writes: the check at plan time only spares
// asking, the one under the file's lock decides.
func TestFileChangedWhileAskedIsStillRefused(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	calls := []Call{call("w", "write_file", `{"path":"a.txt","content":"x"}`)}
	_, results := f.eng.Process(context.Background(), batch(calls...), asking(func([]Confirmation) Decision {
		f.write(t, "a.txt", "changed while asked\n")
		return ApproveAll("tester")
	}), RunOptions{})
	if r := results[0]; r.OK || r.Error.Kind != abi.KindStaleFile || !strings.Contains(r.Error.Message, "changed since last read") {
		t.Fatalf("result %+v, want StaleFile: changed since last read", r.Error)
	}
	if got, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(got) != "changed while asked\n" {
		t.Errorf("a.txt holds %q, want the change made while asked", got)
	}
}

// A patch of a file too large to patch is not hashed when planning: the
// patch fails as too large when it runs, read or not, and says so.
func TestStaleCheckSkipsFilesTooLargeToPatch(t *testing.T) {
	f := configFixture(t, Config{Policy: DefaultPolicy(), Limits: abi.Limits{MaxScanBytes: 64}})
	f.write(t, "big.txt", strings.Repeat("x", 100)+"\n")
	calls := []Call{call("p", "apply_patch", `{"patch":"LP1\nF big.txt\nT\nmore\n.\nEND\n"}`)}
	p := f.eng.Plan(context.Background(), batch(calls...))
	if got := dispositions(p); got != "confirm" {
		t.Fatalf("dispositions %s, want confirm (%+v)", got, p.Calls[0].Result)
	}
	results := f.eng.Run(context.Background(), p, ApproveAll("tester"), RunOptions{})
	if r := results[0]; r.OK || r.Error.Kind != abi.KindExecutionFailed || !strings.Contains(r.Error.Message, "max_scan_bytes") {
		t.Errorf("result %+v, want too large to edit in place", r.Error)
	}
}

// write_file's dry run of a file never read shows its diff: the check when
// planning refuses only what the call would be refused.
func TestDryRunOfUnreadFileIsNotRefused(t *testing.T) {
	f := policyFixture(t, DefaultPolicy())
	f.write(t, "u.txt", "unread\n")
	calls := []Call{call("w", "write_file", `{"path":"u.txt","content":"x\n","dry_run":true}`)}
	_, results := f.eng.Process(context.Background(), batch(calls...), answer(ApproveAll("tester")), RunOptions{})
	if r := results[0]; !r.OK || !strings.Contains(r.Content, "+x") {
		t.Fatalf("result %+v (%+v), want the dry run's diff", r, r.Error)
	}
}

package hostfn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
)

// FR-TOOL-PATCH-01a, NFR-SEC-*: a call writes only the
// paths approval covered — the ones its arguments name — and a path
// approved for creation is never replaced, by fs_write, by any file of
// fs_commit, or in a dry run's report.
func TestWrites_OnlyWhereApprovalSaid(t *testing.T) {
	type grants map[string]WriteGrant // by workspace-relative name
	write := func(path, data string) func(*guest, *Env) error {
		return func(g *guest, env *Env) error {
			_, err := g.write(env, path, []byte(data), abi.WriteCreateDirs)
			return err
		}
	}
	commit := func(flags uint32, files ...abi.CommitFile) func(*guest, *Env) error {
		return func(g *guest, env *Env) error {
			_, err := g.commit(context.Background(), env, files, flags)
			return err
		}
	}
	file := func(path, data string, flags uint32) abi.CommitFile {
		return abi.CommitFile{Path: path, Data: []byte(data), Flags: flags}
	}
	tests := []struct {
		name   string
		grants grants // nil: no restriction
		do     func(*guest, *Env) error
		kind   abi.ErrorKind // "" for success
		msg    string
		after  map[string]string
	}{
		{"named path", grants{"a.txt": WriteAny}, write("a.txt", "A2"), "", "", map[string]string{"a.txt": "A2"}},
		{"no restriction", nil, write("b.txt", "B2"), "", "", map[string]string{"b.txt": "B2"}},
		{"path not named", grants{"a.txt": WriteAny}, write("b.txt", "B2"), abi.KindSandboxViolation,
			"call c2 may write only the paths its arguments name (a.txt); b.txt was not named", map[string]string{"b.txt": "B"}},
		{"no path named", grants{}, write("b.txt", "B2"), abi.KindSandboxViolation,
			"call c2 may not write any file", map[string]string{"b.txt": "B"}},
		{"commit with a file not named", grants{"a.txt": WriteAny},
			commit(0, file("a.txt", "A2", 0), file("b.txt", "B2", 0)), abi.KindSandboxViolation,
			"b.txt was not named", map[string]string{"a.txt": "A", "b.txt": "B"}},
		{"dry run with a file not named", grants{"a.txt": WriteAny},
			commit(abi.CommitDryRun, file("a.txt", "A2", 0), file("b.txt", "B2", 0)), abi.KindSandboxViolation,
			"b.txt was not named", nil},
		{"create-only, absent", grants{"d/new.txt": WriteCreateOnly}, write("d/new.txt", "N"), "", "", map[string]string{"d/new.txt": "N"}},
		{"create-only, created meanwhile", grants{"made.txt": WriteCreateOnly}, write("made.txt", "mine"), abi.KindStaleFile,
			"call c2 was approved to create made.txt, but made.txt exists now (another call created it); nothing was replaced. Replacing it needs a new call that is approved as an overwrite",
			map[string]string{"made.txt": "theirs"}},
		{"create-only in a commit", grants{"a.txt": WriteAny, "made.txt": WriteCreateOnly},
			commit(0, file("a.txt", "A2", 0), file("made.txt", "mine", 0)), abi.KindStaleFile,
			"was approved to create made.txt", map[string]string{"a.txt": "A", "made.txt": "theirs"}},
		{"create-only in a dry run", grants{"made.txt": WriteCreateOnly},
			commit(abi.CommitDryRun, file("made.txt", "mine", 0)), abi.KindStaleFile, "was approved to create made.txt", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkspace(t, map[string]string{"a.txt": "A", "b.txt": "B", "made.txt": "theirs"})
			// The conversation read every file, so freshness never is
			// what refuses here.
			for _, name := range []string{"a.txt", "b.txt", "made.txt"} {
				w.recordRead(t, name)
			}
			env := w.env("c2")
			if tt.grants != nil {
				env.Writes = map[string]WriteGrant{}
				for name, g := range tt.grants {
					env.Writes[w.abs(name)] = g
				}
			}
			err := tt.do(newGuest(1<<16), env)
			if tt.kind == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				he := hostErr(t, err)
				if he.Kind != tt.kind || !strings.Contains(he.Message, tt.msg) {
					t.Fatalf("error %s %q, want %s containing %q", he.Kind, he.Message, tt.kind, tt.msg)
				}
				if he.Kind == abi.KindSandboxViolation && (he.Status != abi.StatusDenied || he.Details["reason"] != string(abi.DenialNotNamed)) {
					t.Errorf("status %v, details %v; want denied with a reason", he.Status, he.Details)
				}
			}
			for name, want := range tt.after {
				if got := w.content(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// Calls of one conversation that read a file and then
// write it, at the same time, cannot both pass the stale check: exactly
// one wins, every other gets StaleFile, and no update is lost — through
// fs_write (read_file then write) and through fs_commit (apply_patch's
// for_update read then commit).
func TestWrites_ConcurrentReadThenWrite(t *testing.T) {
	const calls, rounds = 6, 15
	flows := map[string]struct {
		read  func(*guest, *Env) error
		write func(*guest, *Env, string) error
	}{
		"fs_write": {
			read: func(g *guest, env *Env) error {
				_, _, err := g.read(env, "a.txt", 0, -1, abi.ReadRecord)
				return err
			},
			write: func(g *guest, env *Env, data string) error {
				_, err := g.write(env, "a.txt", []byte(data), 0)
				return err
			},
		},
		"fs_commit": {
			read: func(g *guest, env *Env) error {
				_, _, err := g.read(env, "a.txt", 0, 0, abi.ReadForUpdate)
				return err
			},
			write: func(g *guest, env *Env, data string) error {
				_, err := g.commit(context.Background(), env, []abi.CommitFile{{Path: "a.txt", Data: []byte(data)}}, 0)
				return err
			},
		},
	}
	for name, flow := range flows {
		t.Run(name, func(t *testing.T) {
			w := newWorkspace(t, map[string]string{"a.txt": "A"})
			w.recordRead(t, "a.txt")
			for round := range rounds {
				var read, wrote sync.WaitGroup
				read.Add(calls)
				errs := make([]error, calls)
				for i := range calls {
					wrote.Go(func() {
						g, env := newGuest(1<<16), w.env(fmt.Sprintf("c%d", i))
						err := flow.read(g, env)
						read.Done()
						if err != nil {
							errs[i] = err
							return
						}
						read.Wait() // every call has read before any writes
						errs[i] = flow.write(g, env, fmt.Sprintf("round %d call %d", round, i))
					})
				}
				wrote.Wait()
				winner := -1
				for i, err := range errs {
					switch {
					case err == nil && winner >= 0:
						t.Fatalf("round %d: calls %d and %d both wrote; one update was lost", round, winner, i)
					case err == nil:
						winner = i
					case hostErr(t, err).Kind != abi.KindStaleFile:
						t.Fatalf("round %d: call %d: %v, want StaleFile", round, i, err)
					}
				}
				if winner < 0 {
					t.Fatalf("round %d: no call wrote", round)
				}
				if got, want := w.content("a.txt"), fmt.Sprintf("round %d call %d", round, winner); got != want {
					t.Fatalf("round %d: a.txt = %q, want the winner's %q", round, got, want)
				}
			}
		})
	}
}

// Without a read in the call (write_file): a call based
// on what the conversation read before it began is stale once another
// call of the conversation changed the file after it began.
func TestWrites_ChangedSinceCallBegan(t *testing.T) {
	w := newWorkspace(t, map[string]string{"a.txt": "A"})
	w.recordRead(t, "a.txt")
	first, second := w.env("c1"), w.env("c2") // both begin now
	if _, err := newGuest(1<<10).write(first, "a.txt", []byte("first"), 0); err != nil {
		t.Fatal(err)
	}
	_, err := newGuest(1<<10).write(second, "a.txt", []byte("second"), 0)
	if he := hostErr(t, err); he.Kind != abi.KindStaleFile || !strings.Contains(he.Message, "changed since this call was planned") {
		t.Fatalf("second write: %v, want StaleFile saying the file changed since the call was planned", err)
	}
	if got := w.content("a.txt"); got != "first" {
		t.Errorf("a.txt = %q, want the first call's", got)
	}
	// A call that begins afterwards is based on the new content.
	if _, err := newGuest(1<<10).write(w.env("c3"), "a.txt", []byte("third"), 0); err != nil {
		t.Errorf("a later call: %v", err)
	}
}

// Commits of overlapping files named in opposite orders,
// running at the same time, never deadlock; every one either commits or
// is refused as stale.
func TestWrites_CommitsNeverDeadlock(t *testing.T) {
	w := newWorkspace(t, map[string]string{"a": "0", "b": "0", "c": "0"})
	for _, n := range []string{"a", "b", "c"} {
		w.recordRead(t, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	orders := [][]string{{"a", "b", "c"}, {"c", "b", "a"}, {"b", "c"}, {"c", "a"}}
	var wg sync.WaitGroup
	for i, order := range orders {
		wg.Go(func() {
			for round := range 30 {
				g, env := newGuest(1<<16), w.env(fmt.Sprintf("c%d-%d", i, round))
				files := make([]abi.CommitFile, len(order))
				var err error
				for j, n := range order {
					if _, _, err = g.read(env, n, 0, 0, abi.ReadForUpdate); err != nil {
						break // another commit changed it just now
					}
					files[j] = abi.CommitFile{Path: n, Data: fmt.Appendf(nil, "%d.%d", i, round)}
				}
				if err == nil {
					_, err = g.commit(ctx, env, files, 0)
				}
				var he *Error
				if err != nil && (!errors.As(err, &he) || he.Kind != abi.KindStaleFile) {
					t.Errorf("commit %v: %v (a deadlock ends at the test's deadline)", order, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// CheckFresh, before a call runs, refuses exactly the stale writes the
// write itself refuses, with the same kind, reason and advice, and passes
// what the write would not refuse as stale: a file read and unchanged, a
// new file, a path that is not a regular file.
func TestCheckFreshIsTheWritesRule(t *testing.T) {
	tests := []struct {
		name   string
		prep   func(t *testing.T, w *workspace)
		path   string
		reason string // "" when nothing is stale
	}{
		{"never read", nil, "a.txt", "File was not read before writing"},
		{"read, unchanged", func(t *testing.T, w *workspace) { w.recordRead(t, "a.txt") }, "a.txt", ""},
		{"read, changed since", func(t *testing.T, w *workspace) {
			w.recordRead(t, "a.txt")
			if err := os.WriteFile(w.abs("a.txt"), []byte("changed"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "a.txt", "File content changed since last read"},
		{"read, then replaced by the same bytes", func(t *testing.T, w *workspace) {
			w.recordRead(t, "a.txt")
			if err := os.WriteFile(w.abs("a.txt"), []byte("A"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "a.txt", ""},
		{"a new file", nil, "new.txt", ""},
		{"a directory", nil, "d", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkspace(t, map[string]string{"a.txt": "A", "d/x": "X"})
			if tt.prep != nil {
				tt.prep(t, w)
			}
			p, err := w.sb.Resolve(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			early := CheckFresh(context.Background(), w.sb, w.reads, p, tt.path, "writing")
			if tt.reason == "" {
				if early != nil {
					t.Fatalf("CheckFresh: %v, want nil", early)
				}
				return
			}
			he := hostErr(t, early)
			if he.Kind != abi.KindStaleFile || he.Details["reason"] != tt.reason || he.Details["file"] != tt.path ||
				!strings.Contains(he.Message, tt.path+": "+tt.reason+"; read it") {
				t.Fatalf("CheckFresh: %s %q %v, want StaleFile for %s: %s", he.Kind, he.Message, he.Details, tt.path, tt.reason)
			}
			// The write itself, with the conversation's reads and nothing
			// of its own, refuses it the same way.
			_, err = newGuest(1<<16).write(w.env("c1"), tt.path, []byte("new"), 0)
			late := hostErr(t, err)
			if late.Kind != he.Kind || late.Message != he.Message || late.Details["reason"] != he.Details["reason"] {
				t.Errorf("the write refused it as %s %q, CheckFresh as %s %q", late.Kind, late.Message, he.Kind, he.Message)
			}
		})
	}
}

// CheckFresh leaves to the write what it cannot judge for certain: with
// its ctx ended it cannot hash a file the conversation read, and refuses
// nothing.
func TestCheckFreshLeavesTheUncertainToTheWrite(t *testing.T) {
	w := newWorkspace(t, map[string]string{"a.txt": "A"})
	w.recordRead(t, "a.txt")
	if err := os.WriteFile(w.abs("a.txt"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := w.sb.Resolve("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := CheckFresh(ctx, w.sb, w.reads, p, "a.txt", "writing"); err != nil {
		t.Errorf("CheckFresh with its ctx ended: %v, want nil", err)
	}
}

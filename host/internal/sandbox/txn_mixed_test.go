//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A mixed transaction: writes, removals of a file, links and trees,
// directories, and moves of files, links and trees, in one directory,
// between directories, over a directory, and to and from another file
// system (a tmpfs where there is one). Every test below runs it; the
// tree it starts from and the one a commit leaves are compared whole.

// mixedDirs are the directories of one mixed fixture.
type mixedDirs struct {
	root, second, outside, recovery string
}

func (d mixedDirs) String() string {
	return strings.Join([]string{d.root, d.second, d.outside}, ",")
}

// newMixedDirs makes the fixture's directories and tree. second is on
// another file system when the machine has one (/dev/shm).
func newMixedDirs(t *testing.T) mixedDirs {
	t.Helper()
	d := mixedDirs{root: canonTempDir(t), outside: canonTempDir(t)}
	d.recovery = filepath.Join(canonTempDir(t), "txn")
	must(t, os.MkdirAll(d.recovery, 0o700))
	d.second = otherFSDir(t)
	mustWrite(t, filepath.Join(d.outside, "secret.txt"), "SECRET")
	opsTree(t, d.root, d.outside, d.recovery)
	for name, content := range map[string]string{
		"t1/f.txt": "T1F", "t1/g/h.txt": "T1H", "t2/old.txt": "T2OLD", "t3/c.txt": "C",
	} {
		mustWrite(t, filepath.Join(d.root, name), content)
	}
	for name, content := range map[string]string{
		"o.txt": "R2 O", "r2dir/f.txt": "R2F", "r2dir/deep/g.txt": "R2G",
	} {
		mustWrite(t, filepath.Join(d.second, name), content)
	}
	must(t, os.Symlink("f.txt", filepath.Join(d.second, "r2dir/l")))
	return d
}

// otherFSDir is a new directory on another file system than the test's
// temporary directories if there is one (/dev/shm), else a temporary
// directory: the moves between roots then rename instead of copy.
func otherFSDir(t *testing.T) string {
	t.Helper()
	tmp := canonTempDir(t)
	var a, b os.FileInfo
	a, errA := os.Stat("/dev/shm")
	b, errB := os.Stat(tmp)
	if errA != nil || errB != nil || sameDevice(a, b) {
		t.Log("no second file system (/dev/shm): moves between the roots rename instead of copying")
		return tmp
	}
	d, err := os.MkdirTemp("/dev/shm", "toolhost-txn-")
	if err != nil {
		t.Logf("no directory in /dev/shm (%v): moves between the roots rename instead of copying", err)
		return tmp
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	canon, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return canon
}

func (d mixedDirs) sandbox(t *testing.T) *Sandbox {
	t.Helper()
	s, err := New(Config{Roots: []string{d.root, d.second}, RecoveryDir: d.recovery, AllowAbsolute: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// snap is the whole state of both roots, with the fixture's own
// directory names replaced, so two fixtures compare equal.
func (d mixedDirs) snap(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range snapshotRoots(t, map[string]string{"R1": d.root, "R2": d.second}) {
		v = strings.ReplaceAll(v, d.outside, "$OUTSIDE")
		out[k] = strings.ReplaceAll(v, d.recovery, "$RECOVERY")
	}
	return out
}

// stageMixed stages the mixed transaction.
func stageMixed(t *testing.T, s *Sandbox, d mixedDirs) *Txn {
	t.Helper()
	txn := s.Begin()
	t.Cleanup(func() { txn.Close() })
	if err := stageMixedOn(t, s, d, txn); err != nil {
		t.Fatal(err)
	}
	return txn
}

// stageMixedOn stages the mixed transaction's steps in txn, stopping at
// the first that fails.
func stageMixedOn(t *testing.T, s *Sandbox, d mixedDirs, txn *Txn) error {
	t.Helper()
	r1 := func(rel string) Path { return entry(t, s, filepath.Join(d.root, rel)) }
	r2 := func(rel string) Path { return entry(t, s, filepath.Join(d.second, rel)) }
	steps := []struct {
		name string
		do   func() error
	}{
		{"write b.txt", func() error { _, err := txn.Stage(r1("b.txt"), []byte("new B"), false); return err }},
		{"mkdir nd/deeper", func() error { _, err := txn.StageMkdir(r1("nd/deeper")); return err }},
		{"move dir into nd/deeper", func() error { return txn.StageMove(r1("dir"), r1("nd/deeper/dir"), false, false) }},
		{"remove out-link", func() error { return txn.StageRemove(r1("out-link"), false) }},
		{"move a.txt over R2 o.txt", func() error { return txn.StageMove(r1("a.txt"), r2("o.txt"), true, false) }},
		{"remove other", func() error { return txn.StageRemove(r1("other"), true) }},
		{"create nd/new.txt", func() error { return txn.StageNew(r1("nd/new.txt"), []byte("NEW"), false) }},
		{"move R2 r2dir to R1", func() error { return txn.StageMove(r2("r2dir"), r1("from-r2"), false, false) }},
		{"move in-link", func() error { return txn.StageMove(r1("in-link"), r1("nd/in-link"), false, false) }},
		{"move t1 over t2", func() error { return txn.StageMove(r1("t1"), r1("t2"), true, false) }},
		{"remove state-link", func() error { return txn.StageRemove(r1("state-link"), false) }},
		{"move t3/c.txt to a new directory", func() error { return txn.StageMove(r1("t3/c.txt"), r1("zz/c.txt"), false, true) }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			return fmt.Errorf("stage %s: %w", st.name, err)
		}
	}
	return nil
}

// mixedEvents runs the mixed transaction on a fixture of its own and
// returns the points its hooks passed, in order ("stage:N", "step:N:S",
// "renamed"), with the trees before and after.
func mixedEvents(t *testing.T) (events []string, before, after map[string]string) {
	t.Helper()
	d := newMixedDirs(t)
	s := d.sandbox(t)
	before = d.snap(t)
	s.testHookAfterStage = func(i int) { events = append(events, fmt.Sprintf("stage:%d", i)) }
	s.testHookStep = func(i int, step string) error {
		events = append(events, fmt.Sprintf("step:%d:%s", i, step))
		return nil
	}
	s.testHookAfterRenames = func() { events = append(events, "renamed") }
	if err := stageMixed(t, s, d).Commit(); err != nil {
		t.Fatalf("the mixed transaction: %v", err)
	}
	after = d.snap(t)
	noTempFiles(t, d.root, d.second)
	return events, before, after
}

// The mixed transaction commits what it says: spot checks of the tree
// it leaves (the other tests compare against that tree whole).
func TestTxn_Mixed(t *testing.T) {
	_, before, after := mixedEvents(t)
	for k, want := range map[string]string{
		"R1/b.txt":                  `file -rw-r--r-- "new B"`,
		"R1/nd/deeper/dir/sub/z.sh": `file -rwxr-x--x "Z"`,
		"R1/nd/deeper/dir/sub":      "dir -rwxr-x---",
		"R2/o.txt":                  `file -rw-r--r-- "A"`,
		"R1/from-r2/l":              "link -> f.txt",
		"R1/from-r2/deep/g.txt":     `file -rw-r--r-- "R2G"`,
		"R1/nd/in-link":             "link -> a.txt",
		"R1/t2/g/h.txt":             `file -rw-r--r-- "T1H"`,
		"R1/zz/c.txt":               `file -rw-r--r-- "C"`,
		"R1/t3/c.txt":               "",
		"R1/t2/old.txt":             "",
		"R1/other":                  "",
		"R1/out-link":               "",
		"R1/state-link":             "",
		"R1/a.txt":                  "",
		"R2/r2dir":                  "",
		"R1/t1":                     "",
		"R1/nd/new.txt":             `file -rw-r--r-- "NEW"`,
	} {
		if after[k] != want {
			t.Errorf("%s = %q, want %q", k, after[k], want)
		}
	}
	if before["R1/t2/old.txt"] == "" || before["R1/other/o.txt"] == "" {
		t.Fatalf("the fixture lacks what the transaction changes: %v", before)
	}
}

// A failure at any step of the commit (and while a copy to another
// file system is made) leaves both roots exactly as they were, with no
// leftover and no recovery record.
func TestTxn_MixedRollsBackAtEveryStep(t *testing.T) {
	events, _, _ := mixedEvents(t)
	n := 0
	for _, ev := range events {
		if !strings.HasPrefix(ev, "step:") {
			continue
		}
		n++
		t.Run(ev, func(t *testing.T) {
			d := newMixedDirs(t)
			s := d.sandbox(t)
			before := d.snap(t)
			injected := errors.New("injected failure")
			s.testHookStep = func(i int, step string) error {
				if fmt.Sprintf("step:%d:%s", i, step) == ev {
					return injected
				}
				return nil
			}
			txn := s.Begin()
			err := stageMixedOn(t, s, d, txn)
			if err == nil {
				err = txn.Commit()
			}
			txn.Close()
			if !errors.Is(err, injected) {
				t.Fatalf("transaction = %v, want the injected failure", err)
			}
			if diff := diffSnapshots(d.snap(t), before); diff != "" {
				t.Errorf("after the failure the tree differs:%s", diff)
			}
			noTempFiles(t, d.root, d.second)
			if left, _ := os.ReadDir(d.recovery); len(left) != 0 {
				t.Errorf("recovery directory still holds %v", left)
			}
		})
	}
	if n < 20 {
		t.Fatalf("only %d steps seen: %v", n, events)
	}
}

// The child half of TestRecover_KilledMidMixed: with the variable set it
// runs the mixed transaction on the fixture it names and, at the point
// it names, says "ready" and waits for the SIGKILL. A point is
// "EVENT#N", the N-th time the hooks pass EVENT, or "EVENT#N/FAIL#M",
// which first makes the commit fail at FAIL's M-th time, so that the
// kill comes during the rollback.
const mixedChildEnv = "TOOLHOST_TEST_TXN_MIXED_CHILD"

func TestRecoverMixed_Child(t *testing.T) {
	spec := os.Getenv(mixedChildEnv)
	if spec == "" {
		t.Skip("run by TestRecover_KilledMidMixed in a child process")
	}
	parts := strings.Split(spec, "|")
	dirs := strings.Split(parts[0], ",")
	d := mixedDirs{root: dirs[0], second: dirs[1], outside: dirs[2], recovery: parts[1]}
	kill, fail, _ := strings.Cut(parts[2], "/")
	s := d.sandbox(t)
	seen := map[string]int{}
	pass := func(ev string) error {
		seen[ev]++
		at := fmt.Sprintf("%s#%d", ev, seen[ev])
		if at == kill {
			fmt.Println("ready")
			os.Stdout.Sync()
			time.Sleep(time.Minute) // killed long before
			os.Exit(3)
		}
		if at == fail {
			return errors.New("injected failure")
		}
		return nil
	}
	s.testHookAfterStage = func(i int) { pass(fmt.Sprintf("stage:%d", i)) }
	s.testHookStep = func(i int, step string) error { return pass(fmt.Sprintf("step:%d:%s", i, step)) }
	s.testHookAfterRenames = func() { pass("renamed") }
	s.testHookAfterRollback = func() { pass("rolledback") }
	err := stageMixed(t, s, d).Commit()
	t.Fatalf("the commit ended (%v); the kill point %s was never reached", err, kill)
}

// numbered gives each event its occurrence: "EVENT#N".
func numbered(events []string) []string {
	seen := map[string]int{}
	out := make([]string, len(events))
	for i, ev := range events {
		seen[ev]++
		out[i] = fmt.Sprintf("%s#%d", ev, seen[ev])
	}
	return out
}

// A process killed at any point of the mixed transaction — while it
// stages (and copies to another file system), between any two steps of
// its commit, once every step is done, and anywhere in a rollback —
// leaves what Recover puts back to exactly the tree before or, only once
// every step was done, exactly the tree after: every file old or new,
// none lost, none twice, no leftover, no record.
func TestRecover_KilledMidMixed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process per kill point")
	}
	events, before, after := mixedEvents(t)
	points := numbered(events)
	// Kill points inside a rollback: the commit fails at its last step,
	// and the kill comes before each undo and once it is done.
	last := ""
	for _, p := range points {
		if strings.HasPrefix(p, "step:") {
			last = p
		}
	}
	n := 0 // entries: every one passes "step:I:" at commit
	for _, p := range points {
		if i, ok := strings.CutPrefix(p, "step:"); ok && strings.HasSuffix(i, ":#1") {
			n++
		}
	}
	for i := range n {
		points = append(points, fmt.Sprintf("step:%d:undo#1/%s", i, last))
	}
	points = append(points, fmt.Sprintf("step:%d:cleanup#1/%s", n, last), "rolledback#1/"+last)
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			d := newMixedDirs(t)
			if diff := diffSnapshots(d.snap(t), before); diff != "" {
				t.Fatalf("the fixture differs from the reference run's:%s", diff)
			}
			killChildAt(t, "TestRecoverMixed_Child", mixedChildEnv, d.String(), d.recovery, point)
			s := d.sandbox(t)
			recs, err := s.Recover()
			if err != nil {
				t.Fatalf("Recover: %v", err)
			}
			got := d.snap(t)
			toBefore, toAfter := diffSnapshots(got, before), diffSnapshots(got, after)
			wantAfter := strings.HasPrefix(point, "renamed#")
			switch {
			case wantAfter && toAfter != "":
				t.Errorf("killed once every step was done, Recover left a tree that is not the committed one:%s", toAfter)
			case !wantAfter && toBefore != "":
				t.Errorf("killed before the commit finished, Recover left a tree that is not the old one:%s", toBefore)
			}
			if len(recs) != 1 || recs[0].Completed != wantAfter || len(recs[0].Kept) != 0 {
				t.Errorf("Recover = %+v, want one record, completed %v, nothing kept", recs, wantAfter)
			}
			noTempFiles(t, d.root, d.second)
			if left, _ := os.ReadDir(d.recovery); len(left) != 0 {
				t.Errorf("recovery directory still holds %v", left)
			}
			if again, err := s.Recover(); len(again) != 0 || err != nil {
				t.Errorf("second Recover = %+v, %v; want nothing to do", again, err)
			}
		})
	}
}

// A source created again after a crash that had moved it is kept, and
// so is the moved entry: Recover says so instead of replacing either.
// The destination's old entry stays in its backup, which it names.
func TestRecover_MovedSourceRecreatedIsKept(t *testing.T) {
	events, _, _ := mixedEvents(t)
	last := ""
	for _, p := range numbered(events) {
		if strings.HasPrefix(p, "step:") {
			last = p
		}
	}
	d := newMixedDirs(t)
	killChildAt(t, "TestRecoverMixed_Child", mixedChildEnv, d.String(), d.recovery, last)
	mustWrite(t, filepath.Join(d.root, "t1"), "someone else's t1")
	mustWrite(t, filepath.Join(d.root, "in-link"), "someone else's in-link")
	s := d.sandbox(t)
	recs, err := s.Recover()
	if err != nil || len(recs) != 1 {
		t.Fatalf("Recover = %+v, %v", recs, err)
	}
	kept := strings.Join(recs[0].Kept, "\n")
	for _, want := range []string{"t1 was moved to " + filepath.Join(d.root, "t2"), "in-link was moved to", "what was there before is in " + filepath.Join(d.root, ".toolhost-bak-")} {
		if !strings.Contains(kept, want) {
			t.Errorf("Kept = %q, want it to say %q", recs[0].Kept, want)
		}
	}
	got := d.snap(t)
	for k, want := range map[string]string{
		"R1/t1":         `file -rw-r--r-- "someone else's t1"`,
		"R1/t2/g/h.txt": `file -rw-r--r-- "T1H"`,
		"R1/in-link":    `file -rw-r--r-- "someone else's in-link"`,
		"R1/nd/in-link": "link -> a.txt",
		"R1/a.txt":      `file -rw-r--r-- "A"`,
		"R2/o.txt":      `file -rw-r--r-- "R2 O"`,
	} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	if n := leftovers(t, d.root); n != 1 {
		t.Errorf("%d leftovers, want t2's old entry kept in its backup", n)
	}
}

//go:build unix

package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The child half of TestRecover_KilledMidCommit: with the environment
// variable set, this test stages the fixture's three files with a
// recovery directory, announces "ready" on stdout at the kill point, and
// waits there for the SIGKILL.
const childEnv = "TOOLHOST_TEST_TXN_CHILD"

func TestRecover_Child(t *testing.T) {
	s := childSandbox(t, childEnv, "TestRecover_KilledMidCommit")
	txn := s.Begin()
	for _, rel := range []string{"a.txt", "sub/new.txt", "sub/b.txt"} {
		p, err := s.Resolve(rel)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Stage(p, []byte("new "+rel), false); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	t.Fatal("the commit finished; the kill point was never reached")
}

// A process killed at any point of a commit leaves
// nothing that Recover does not put right — all or nothing
// (FR-TOOL-PATCH-01a) — and no .toolhost-* file behind.
func TestRecover_KilledMidCommit(t *testing.T) {
	old := map[string]string{"a.txt": "A", "sub/new.txt": "", "sub/b.txt": "B"}
	committed := map[string]string{"a.txt": "new a.txt", "sub/new.txt": "new sub/new.txt", "sub/b.txt": "new sub/b.txt"}
	tests := []struct {
		point     string
		want      map[string]string
		completed bool
		restored  []string
		removed   []string
	}{
		{"stage:1", old, false, nil, nil},                                    // two temporary files, no rename
		{"rename:1", old, false, []string{"a.txt"}, nil},                     // a.txt replaced, with a backup
		{"rename:2", old, false, []string{"a.txt"}, []string{"sub/new.txt"}}, // a.txt replaced, new.txt created
		{"renamed:0", committed, true, nil, nil},                             // every rename done, backups still there
	}
	for _, tt := range tests {
		t.Run(tt.point, func(t *testing.T) {
			f := newFixture(t, Config{})
			recovery := filepath.Join(t.TempDir(), "txn")
			killAt(t, f.root, recovery, tt.point)
			if leftovers(t, f.root) == 0 {
				t.Fatal("the killed child left no .toolhost-* file; the test tests nothing")
			}

			s, err := New(Config{Roots: []string{f.root}, RecoveryDir: recovery})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			recs, err := s.Recover()
			if err != nil {
				t.Fatalf("Recover: %v", err)
			}
			if len(recs) != 1 {
				t.Fatalf("Recover replayed %d records, want 1: %+v", len(recs), recs)
			}
			r := recs[0]
			if r.Completed != tt.completed || !sameFiles(f.root, r.Restored, tt.restored) || !sameFiles(f.root, r.Removed, tt.removed) || len(r.Kept) != 0 {
				t.Errorf("Recovered = %+v, want completed %v, restored %v, removed %v", r, tt.completed, tt.restored, tt.removed)
			}
			wantContents(t, f.root, tt.want)
			if fi, _ := os.Stat(filepath.Join(f.root, "a.txt")); fi.Mode().Perm() != 0o644 {
				t.Errorf("a.txt mode %v after recovery", fi.Mode().Perm())
			}
			noTempFiles(t, f.root)
			if left, _ := os.ReadDir(recovery); len(left) != 0 {
				t.Errorf("recovery directory still holds %v", left)
			}
			if again, err := s.Recover(); len(again) != 0 || err != nil {
				t.Errorf("second Recover = %+v, %v; want nothing to do", again, err)
			}
		})
	}
}

// childSandbox is the sandbox of a child test that the test named parent
// started with root, recovery directory and kill point in env: its hooks
// stop the commit at the point ("stage:N", "rename:N", "renamed:0"), say
// "ready" on stdout and wait there for the SIGKILL.
func childSandbox(t *testing.T, env, parent string) *Sandbox {
	t.Helper()
	spec := os.Getenv(env)
	if spec == "" {
		t.Skip("run by " + parent + " in a child process")
	}
	parts := strings.Split(spec, "|")
	root, recovery, point := parts[0], parts[1], parts[2]
	kind, n, _ := strings.Cut(point, ":")
	at, _ := strconv.Atoi(n)
	s, err := New(Config{Roots: []string{root}, RecoveryDir: recovery})
	if err != nil {
		t.Fatal(err)
	}
	pause := func() {
		fmt.Println("ready")
		os.Stdout.Sync()
		time.Sleep(time.Minute) // killed long before
		os.Exit(3)
	}
	switch kind {
	case "stage":
		s.testHookAfterStage = func(i int) {
			if i == at {
				pause()
			}
		}
	case "rename":
		s.testHookBeforeRename = func(i int) error {
			if i == at {
				pause()
			}
			return nil
		}
	case "renamed":
		s.testHookAfterRenames = pause
	}
	return s
}

// killAt runs TestRecover_Child until it reaches point, then SIGKILLs it.
func killAt(t *testing.T, root, recovery, point string) {
	t.Helper()
	killChildAt(t, "TestRecover_Child", childEnv, root, recovery, point)
}

// killChildAt runs the test named test as a child, told root, recovery
// and point through env, until it says it reached point; then SIGKILLs
// it.
func killChildAt(t *testing.T, test, env, root, recovery, point string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+root+"|"+recovery+"|"+point)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			t.Fatalf("child ended without reaching %s: %s", point, stderr.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child never reached %s: %s", point, stderr.String())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
}

func leftovers(t *testing.T, root string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(root, func(path string, _ fs.DirEntry, _ error) error {
		if strings.HasPrefix(filepath.Base(path), LeftoverPrefix) {
			n++
		}
		return nil
	})
	return n
}

func sameFiles(root string, got, want []string) bool {
	w := make([]string, len(want))
	for i, rel := range want {
		w[i] = filepath.Join(root, rel)
	}
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(w)))
}

// A transaction still running (here in this process, paused before its
// second rename) is never touched by Recover, from any Sandbox sharing
// the recovery directory; it then commits normally.
func TestRecover_LeavesLiveTransactionsAlone(t *testing.T) {
	f := newFixture(t, Config{})
	recovery := filepath.Join(t.TempDir(), "txn")
	s, err := New(Config{Roots: []string{f.root}, RecoveryDir: recovery})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	paused, resume := make(chan struct{}), make(chan struct{})
	s.testHookBeforeRename = func(i int) error {
		if i == 1 {
			close(paused)
			<-resume
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		txn := s.Begin()
		defer txn.Close()
		for _, rel := range []string{"a.txt", "sub/b.txt"} {
			p, err := s.Resolve(rel)
			if err == nil {
				_, err = txn.Stage(p, []byte("new "+rel), false)
			}
			if err != nil {
				done <- err
				return
			}
		}
		done <- txn.Commit()
	}()
	<-paused
	other, err := New(Config{Roots: []string{f.root}, RecoveryDir: recovery})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, sb := range []*Sandbox{other, s} {
		if recs, err := sb.Recover(); len(recs) != 0 || err != nil {
			t.Errorf("Recover during a live commit = %+v, %v; want it left alone", recs, err)
		}
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantContents(t, f.root, map[string]string{"a.txt": "new a.txt", "sub/b.txt": "new sub/b.txt"})
	noTempFiles(t, f.root)
	if left, _ := os.ReadDir(recovery); len(left) != 0 {
		t.Errorf("recovery directory still holds %v", left)
	}
}

// When a rollback fails, the backup it names is the only copy of the old
// content: the record says so, and Recover does not take that backup for
// the leftover of a finished commit.
func TestRecover_KeepsBackupOfFailedRollback(t *testing.T) {
	f := newFixture(t, Config{})
	recovery := filepath.Join(t.TempDir(), "txn")
	s, err := New(Config{Roots: []string{f.root}, RecoveryDir: recovery})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := filepath.Join(f.root, "a.txt")
	var record string
	s.testHookBeforeRename = func(i int) error {
		if i == 1 {
			os.Remove(first)
			mustWrite(t, filepath.Join(first, "x"), "X") // a directory: the restore fails
			// Keep a copy of the record to replay as if the process had
			// died right after the rollback.
			entries, _ := os.ReadDir(recovery)
			record = filepath.Join(recovery, entries[0].Name())
			return errors.New("injected")
		}
		return nil
	}
	txn := s.Begin()
	for _, rel := range []string{"a.txt", "sub/b.txt"} {
		if _, err := txn.Stage(wantResolved(t, s, rel, rel), []byte("new"), false); err != nil {
			t.Fatal(err)
		}
	}
	// Copy the record just before Close removes it.
	s.testHookAfterRollback = func() {
		b, _ := os.ReadFile(record)
		os.WriteFile(record+".copy", b, 0o600)
	}
	var rb *RollbackError
	if err := txn.Commit(); !errors.As(err, &rb) {
		t.Fatalf("Commit = %v, want a *RollbackError", err)
	}
	backup := rb.Unrestored[first]
	if err := os.Rename(record+".copy", record); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recover(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(backup); err != nil || string(got) != "A" {
		t.Errorf("backup %s = %q, %v after Recover; the old content was lost", backup, got, err)
	}
}

// A record whose root is no longer configured is kept, and the error
// says what to do.
func TestRecover_RootNoLongerConfigured(t *testing.T) {
	f := newFixture(t, Config{})
	recovery := filepath.Join(t.TempDir(), "txn")
	killAt(t, f.root, recovery, "rename:1")
	elsewhere := canonTempDir(t)
	s, err := New(Config{Roots: []string{elsewhere}, RecoveryDir: recovery})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Recover()
	if err == nil || !strings.Contains(err.Error(), "no configured root") || !strings.Contains(err.Error(), "kept for the next start") {
		t.Fatalf("Recover = %v, want an error naming the missing root", err)
	}
	if left, _ := os.ReadDir(recovery); len(left) != 1 {
		t.Errorf("recovery directory holds %v, want the record kept", left)
	}
}

// A directory of the commit gone since the crash hides whether its file
// was renamed. Recover must not take the commit as complete and delete
// the backup that holds a.txt's old content: it keeps the record and says
// what to check.
func TestRecover_DirectoryGoneKeepsBackups(t *testing.T) {
	f := newFixture(t, Config{})
	recovery := filepath.Join(t.TempDir(), "txn")
	killAt(t, f.root, recovery, "rename:1") // a.txt replaced; sub/ not yet
	if err := os.RemoveAll(filepath.Join(f.root, "sub")); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Roots: []string{f.root}, RecoveryDir: recovery})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Recover()
	if err == nil || !strings.Contains(err.Error(), "no longer exists") || !strings.Contains(err.Error(), "kept for the next start") {
		t.Fatalf("Recover = %v, want an error naming the missing directory", err)
	}
	if leftovers(t, f.root) == 0 {
		t.Error("the backup of a.txt was removed: its old content is lost")
	}
	if left, _ := os.ReadDir(recovery); len(left) != 1 {
		t.Errorf("recovery directory holds %v, want the record kept", left)
	}
}

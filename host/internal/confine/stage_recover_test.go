//go:build linux

package confine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// deadPID is the pid of a process that has ended.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestRecoverStagesOfKilledToolhost: a toolhost killed during a call
// leaves its stages; the next one applies what git writes (packed-refs:
// after git pack-refs the loose refs are gone from the real refs/) and
// refuses the rest, and removes the stages. A live toolhost's stage is
// left alone.
func TestRecoverStagesOfKilledToolhost(t *testing.T) {
	state := t.TempDir()
	base := filepath.Join(state, "sandbox", "stage")
	gitDir := filepath.Join(t.TempDir(), ".git")
	if err := os.MkdirAll(filepath.Join(gitDir, "refs", "heads"), 0o755); err != nil {
		t.Fatal(err)
	}
	stage := func(pid int, files map[string]string) string {
		root := filepath.Join(base, fmt.Sprintf("call-%d-c1-x", pid))
		d := filepath.Join(root, "0")
		for _, sub := range []string{"upper", "work"} {
			if err := os.MkdirAll(filepath.Join(d, sub), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := recordStage(d, gitDir); err != nil {
			t.Fatal(err)
		}
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(d, "upper", name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	dead := stage(deadPID(t), map[string]string{"packed-refs": "abc refs/heads/main\n", "commondir": "../evil\n"})
	live := stage(os.Getppid(), map[string]string{"ORIG_HEAD": "live\n"})

	notes := recoverAllStages(state)
	t.Logf("notes: %q", notes)

	if b, err := os.ReadFile(filepath.Join(gitDir, "packed-refs")); err != nil || string(b) != "abc refs/heads/main\n" {
		t.Errorf("packed-refs of the killed call's stage: %q, %v; want it applied", b, err)
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "commondir")); err == nil {
		t.Errorf("the killed call's commondir was applied to the real git directory")
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "ORIG_HEAD")); err == nil {
		t.Errorf("a live toolhost's stage was applied")
	}
	if _, err := os.Lstat(dead); err == nil {
		t.Errorf("the killed call's stage %s was left", dead)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("a live toolhost's stage was removed: %v", err)
	}
	if len(notes) < 2 {
		t.Errorf("notes %q: want the stage applied and the commondir refused, each said", notes)
	}
	if again := recoverAllStages(state); len(again) != 0 {
		t.Errorf("a second recovery did something: %q", again)
	}
}

// TestRecoverStagesOnlyFromPrivateBases: a stage base others can write
// (as a /dev/shm directory another user made could be) is never
// recovered from: its stages could name any git directory.
func TestRecoverStagesOnlyFromPrivateBases(t *testing.T) {
	state := t.TempDir()
	base := filepath.Join(state, "sandbox", "stage")
	gitDir := filepath.Join(t.TempDir(), ".git")
	d := filepath.Join(base, fmt.Sprintf("call-%d-c1-x", deadPID(t)), "0")
	for _, sub := range []string{"upper", "work"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(gitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := recordStage(d, gitDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "upper", "HEAD"), []byte("ref: refs/heads/planted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	if notes := recoverAllStages(state); len(notes) != 0 {
		t.Errorf("recovered from a base others can write: %q", notes)
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "HEAD")); err == nil {
		t.Errorf("a stage in a base others can write was applied")
	}
}

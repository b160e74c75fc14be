//go:build unix

package proc

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// benchCommands are the commands BenchmarkRun and BenchmarkExecCommand
// both run, so Run's overhead (session, group kill, drain, streaming
// goroutines) can be read off against plain exec.Command.
func benchCommands(b *testing.B) []struct{ name, command string } {
	file := filepath.Join(b.TempDir(), "1MB")
	if err := os.WriteFile(file, make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	return []struct{ name, command string }{
		{"true", "true"},
		{"cat_1MB", "cat " + file},
	}
}

func BenchmarkRun(b *testing.B) {
	dir, env := b.TempDir(), os.Environ()
	bench := func(b *testing.B, command string) {
		for b.Loop() {
			res, err := Run(context.Background(), Spec{Command: command, Dir: dir, Env: env})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("Run: exit %d, %v", res.ExitCode, err)
			}
		}
	}
	for _, bc := range benchCommands(b) {
		b.Run(bc.name, func(b *testing.B) { bench(b, bc.command) })
	}
	// The session kill scans every process on the machine after each
	// command: a busy machine makes it dearer.
	b.Run("true/300 more processes", func(b *testing.B) {
		idleProcesses(b, 300)
		bench(b, "true")
	})
}

// BenchmarkSessionScan is what a command that leaves nothing behind pays
// for the session kill: one scan of /proc that finds no member.
func BenchmarkSessionScan(b *testing.B) {
	log := slog.New(slog.DiscardHandler)
	for _, n := range []int{0, 300} {
		b.Run(fmt.Sprintf("%d more processes", n), func(b *testing.B) {
			idleProcesses(b, n)
			for b.Loop() {
				killSession(noSession, log)
			}
		})
	}
}

// noSession is above any pid Linux hands out (pid_max is at most 2^22),
// so no session has it.
const noSession = 1 << 30

// idleProcesses starts n sleeping processes for the rest of the benchmark.
func idleProcesses(b *testing.B, n int) {
	for range n {
		cmd := exec.Command("sleep", "1000")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
}

func BenchmarkExecCommand(b *testing.B) {
	dir := b.TempDir()
	for _, bc := range benchCommands(b) {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command("sh", "-c", bc.command)
				cmd.Dir = dir
				if _, err := cmd.Output(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

//go:build unix

package proc

import (
	"context"
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
	for _, bc := range benchCommands(b) {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				res, err := Run(context.Background(), Spec{Command: bc.command, Dir: dir, Env: env})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("Run: exit %d, %v", res.ExitCode, err)
				}
			}
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

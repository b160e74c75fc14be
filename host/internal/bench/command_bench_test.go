package bench

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// BenchmarkRunCommand: run_command through the whole engine (schema,
// sandbox check of cwd, plugin, process group, capture, sanitize) beside
// exec.Command running the same shell command and collecting its output.
func BenchmarkRunCommand(b *testing.B) {
	e := setup(b)
	for _, bc := range []struct{ name, command string }{
		{"true", "true"},
		{"cat_1MB", "cat big.txt"},
	} {
		args, _ := json.Marshal(map[string]string{"command": bc.command})
		native := func() error {
			cmd := exec.Command("sh", "-c", bc.command)
			cmd.Dir = e.dir
			_, err := cmd.Output()
			return err
		}
		b.Run(bc.name, func(b *testing.B) { pair(b, e.execute("run_command", string(args)), native) })
	}
}

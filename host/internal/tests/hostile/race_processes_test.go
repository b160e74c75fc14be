//go:build unix

package hostile_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// Several toolhost processes sharing one state directory (and so one
// conversation's read cache) append to the same file at once. Each
// passes stale-file protection only if the file is still what the
// conversation last read or wrote; every append that reports success
// must be in the file, none lost to another process's rename between
// its check and its write (FR-TOOL-PATCH-02d across processes).
func TestProcessesAppendingAtOnceLoseNothing(t *testing.T) {
	w := raceProcNew(t)
	for round := range 4 {
		conv := fmt.Sprintf("r%d", round)
		// A file of some size, so that each write's check and rename are
		// apart long enough for the others to fall in between.
		if err := os.WriteFile(filepath.Join(w.dir, "race.txt"), []byte(raceProcBase), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := w.call(conv, "read_file", `{"path":"race.txt","start_line":1,"end_line":2}`).CombinedOutput(); err != nil {
			t.Fatalf("read_file: %v\n%s", err, out)
		}
		const writers = 5
		var mu sync.Mutex
		var ok []string
		var wg sync.WaitGroup
		for k := range writers {
			line := string(rune('A' + k))
			wg.Go(func() {
				out, _ := w.call(conv, "write_file", `{"path":"race.txt","content":"`+line+`\n","append":true}`).Output()
				var res struct {
					OK    bool `json:"ok"`
					Error struct {
						Kind string `json:"kind"`
					} `json:"error"`
				}
				if err := json.Unmarshal(out, &res); err != nil {
					t.Errorf("write_file %s printed no result: %v\n%s", line, err, out)
					return
				}
				if !res.OK && res.Error.Kind != "StaleFile" {
					t.Errorf("write_file %s failed with %s, want success or StaleFile:\n%s", line, res.Error.Kind, out)
				}
				if res.OK {
					mu.Lock()
					ok = append(ok, line)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		got, err := os.ReadFile(filepath.Join(w.dir, "race.txt"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(strings.TrimPrefix(string(got), raceProcBase), "\n"), "\n")
		slices.Sort(ok)
		slices.Sort(lines)
		if !slices.Equal(ok, lines) {
			t.Fatalf("round %d: appends %v reported success, but the file gained only %q: a write that reported success was lost", round, ok, lines)
		}
	}
}

// raceProcBase is the file the processes append to: 4,000 lines.
var raceProcBase = strings.Repeat("a line of the file that the processes append to, 64 bytes....\n", 4000)

// raceProcWorld is a workspace and the state and configuration that the
// processes of one test share.
type raceProcWorld struct {
	bin, dir, home, cfg, plugins, cache string
}

func raceProcNew(t *testing.T) *raceProcWorld {
	t.Helper()
	w := &raceProcWorld{bin: toolhostBinary(t), dir: t.TempDir(), home: t.TempDir(),
		plugins: testplugin.BuiltIns(t), cache: testplugin.CacheDir(t)}
	w.cfg = filepath.Join(w.home, "operator.toml")
	if err := os.WriteFile(w.cfg, []byte("[tools.approval]\nmode = \"auto\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// call is `toolhost call` of tool in the workspace, in conversation conv,
// with the shared state directory.
func (w *raceProcWorld) call(conv, tool, args string) *exec.Cmd {
	cmd := exec.Command(w.bin, "--state-dir", filepath.Join(w.home, "state"), "--config", w.cfg,
		"--plugins", w.plugins, "call", tool, "--root", w.dir, "--allow", tool,
		"--conversation", conv, "--args", args)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "HOME="+w.home, "XDG_CONFIG_HOME="+filepath.Join(w.home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(w.home, ".state"), "TOOLHOST_CACHE_DIR="+w.cache)
	return cmd
}

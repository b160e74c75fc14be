package hostile_test

// A read counts for the stale-file rule (a file may be overwritten,
// appended to or edited only once the conversation has read it) only
// when it showed the model something of the file. A prompt-injected
// model that asks to see nothing of a file (max_bytes_each 1, a line
// range past its end, a first line longer than the room) must not be
// able to replace it unseen. Through the real binary, with toolhost
// call, in one conversation.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// readShownCLI runs toolhost call in one workspace and one state
// directory, so its calls share a conversation's reads.
type readShownCLI struct {
	bin, plugins, dir, home string
	env                     []string
}

func readShownNew(t *testing.T, bin string, env ...string) *readShownCLI {
	return &readShownCLI{bin: bin, plugins: realPlugins(t), dir: t.TempDir(), home: t.TempDir(), env: env}
}

// readShownResult is toolhost call's result record.
type readShownResult struct {
	OK      bool   `json:"ok"`
	Content string `json:"content"`
	Error   *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *readShownCLI) call(t *testing.T, tool, args string) readShownResult {
	t.Helper()
	cmd := exec.Command(c.bin, "--state-dir", filepath.Join(c.home, "state"), "--plugins", c.plugins,
		"call", tool, "--args", args, "--allow", "write_file")
	cmd.Dir = c.dir
	cmd.Env = append(cmd.Environ(), "HOME="+c.home, "XDG_CONFIG_HOME="+filepath.Join(c.home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(c.home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	cmd.Env = append(cmd.Env, c.env...)
	out, _ := cmd.Output()
	var r readShownResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("toolhost call %s %s printed %q: %v", tool, args, out, err)
	}
	return r
}

func (c *readShownCLI) file(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadShownNothingIsNotARead(t *testing.T) {
	bin := toolhostBinary(t)
	const secret = "secret line one\nline two\n"
	// Within the read limit of 2,000 bytes, but its numbered line is not.
	long := strings.Repeat("y", 1998) + "\n"
	tests := []struct {
		name string
		env  []string
		// file is the victim's content; read is the call that shows
		// (see) something of it, or nothing.
		file string
		tool string
		args string
		// see is in the read's text; shown says it showed some of the
		// file, so the write after it goes through.
		see   string
		shown bool
	}{
		{name: "read_multiple_files one byte each", file: secret, tool: "read_multiple_files",
			args: `{"paths":["victim.txt"],"max_bytes_each":1}`, see: "not even line 1 fits"},
		{name: "read_multiple_files a line each", file: secret, tool: "read_multiple_files",
			args: `{"paths":["victim.txt"],"max_bytes_each":20}`, see: "secret line one\n[truncated] showing lines 1-1", shown: true},
		{name: "read_multiple_files a binary file in one byte", file: "a\x00b" + strings.Repeat("z", 300), tool: "read_multiple_files",
			args: `{"paths":["victim.txt"],"max_bytes_each":1}`, see: "[binary:base64][truncated]\n"},
		{name: "read_multiple_files numbered line past the room", env: []string{"TOOLHOST_TOOLS_OUTPUT_AVAILABLE_CAPACITY_BYTES=2000"}, file: long,
			tool: "read_multiple_files", args: `{"paths":["victim.txt"],"line_numbers":true}`, see: "not even line 1 fits"},
		{name: "read_file a range past the end", file: secret, tool: "read_file",
			args: `{"path":"victim.txt","start_line":5}`, see: "past the end"},
		{name: "read_file a line longer than the room", env: []string{"TOOLHOST_TOOLS_OUTPUT_AVAILABLE_CAPACITY_BYTES=2000"}, file: strings.Repeat("x", 5000) + "\n",
			tool: "read_file", args: `{"path":"victim.txt","start_line":1,"end_line":1}`, see: "not even line 1 fits"},
		{name: "read_file numbered line past the room", env: []string{"TOOLHOST_TOOLS_OUTPUT_AVAILABLE_CAPACITY_BYTES=2000"}, file: long,
			tool: "read_file", args: `{"path":"victim.txt","line_numbers":true}`, see: "not even line 1 fits"},
		{name: "read_file numbered", file: secret, tool: "read_file",
			args: `{"path":"victim.txt","line_numbers":true}`, see: "1→secret line one\n2→line two\n", shown: true},
		{name: "read_file a range", file: secret, tool: "read_file",
			args: `{"path":"victim.txt","start_line":2}`, see: "line two\n", shown: true},
		{name: "read_file an empty file", file: "", tool: "read_file",
			args: `{"path":"victim.txt"}`, shown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := readShownNew(t, bin, tt.env...)
			c.file(t, "victim.txt", tt.file)
			r := c.call(t, tt.tool, tt.args)
			text := r.Content
			if r.Error != nil {
				text = r.Error.Message
			}
			if !strings.Contains(text, tt.see) {
				t.Fatalf("%s %s: %+v, want it to say %q", tt.tool, tt.args, r, tt.see)
			}
			for _, write := range []string{`{"path":"victim.txt","content":"pwned\n"}`, `{"path":"victim.txt","content":"pwned\n","append":true}`} {
				w := c.call(t, "write_file", write)
				if !tt.shown && (w.OK || w.Error == nil || w.Error.Kind != "StaleFile") {
					t.Errorf("write_file %s after a read that showed nothing of the file: %+v, want StaleFile", write, w)
				}
				if tt.shown && !w.OK {
					t.Errorf("write_file %s after a read that showed the file: %+v, want it done", write, w)
				}
				if tt.shown {
					break // the file changed: the append would be stale
				}
			}
			got, _ := os.ReadFile(filepath.Join(c.dir, "victim.txt"))
			if !tt.shown && string(got) != tt.file {
				t.Errorf("victim.txt holds %.80q, want it untouched", got)
			}
		})
	}
}

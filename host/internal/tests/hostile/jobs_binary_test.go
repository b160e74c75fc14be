package hostile_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// jobsServer is one `toolhost serve --stdio` with exec_probe and
// job_probe, and its MCP client.
type jobsServer struct {
	cmd     *exec.Cmd
	session *mcp.ClientSession
}

// jobsServe starts toolhost serve on state in home, confined unless off.
func jobsServe(t *testing.T, bin, plugins, root, home string, off bool) *jobsServer {
	t.Helper()
	cfg := filepath.Join(home, "operator.toml")
	conf := "[tools.approval]\nmode = \"auto\"\ndenylist = []\n"
	if off {
		conf += "[tools.run_command]\nsandbox = \"off\"\nnetwork = \"on\"\n"
	}
	mustWrite(t, cfg, conf)
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", plugins,
		"serve", "--stdio", "--root", root, "--allow", "exec_probe")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	client := mcp.NewClient(&mcp.Implementation{Name: "hostile", Version: "0"}, nil)
	session, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 20 * time.Second}, nil)
	if err != nil {
		t.Fatalf("toolhost serve --stdio: %v", err)
	}
	s := &jobsServer{cmd: cmd, session: session}
	t.Cleanup(func() { session.Close() })
	return s
}

// call runs tool and decodes its JSON text into out; an error result
// fails the test.
func (s *jobsServer) call(t *testing.T, tool string, args map[string]any, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	text := ""
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	if res.IsError {
		if strings.Contains(text, "sandbox could not be set up") {
			t.Skipf("no confinement on this machine: %s", text)
		}
		t.Fatalf("%s %v: %s", tool, args, text)
	}
	if err := json.Unmarshal([]byte(text), out); err != nil {
		t.Fatalf("%s %v: %q: %v", tool, args, text, err)
	}
}

// startBeating starts a background job that appends to root/name every
// 50 ms and says "started", and returns its id once it has.
func (s *jobsServer) startBeating(t *testing.T, name string) string {
	t.Helper()
	var res abi.ExecResult
	began := time.Now()
	s.call(t, "exec_probe", map[string]any{"command": "echo started; while :; do echo x >> " + name + "; sleep 0.05; done", "background": true}, &res)
	if res.JobID == "" {
		t.Fatalf("a background command returned no job id: %+v", res)
	}
	if d := time.Since(began); d > 20*time.Second {
		t.Errorf("the background call took %v: it waited for the command", d)
	}
	var out abi.JobResult
	s.call(t, "job_probe", map[string]any{"op": "output", "id": res.JobID, "wait_ms": 10000}, &out)
	if out.Job == nil || !out.Job.Running || !strings.HasPrefix(out.Job.Output, "started") {
		t.Fatalf("the job after its call returned: %+v", out.Job)
	}
	return res.JobID
}

// jobsBeating reports whether path grows over 600 ms.
func jobsBeating(path string) bool {
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	before := size()
	time.Sleep(600 * time.Millisecond)
	return size() > before
}

// jobsStops waits up to within for path to stop growing.
func jobsStops(path string, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		if !jobsBeating(path) {
			return true
		}
	}
	return false
}

// A background job outlives the call that started it, and not the
// toolhost: it is killed when `toolhost serve` stops, when toolhost is
// killed with SIGKILL (confined: with it; unconfined: by the next start
// on the same state directory).
func TestJobsBinaryLifetime(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement and the job records are Linux only")
	}
	bin := toolhostBinary(t)
	plugins := pluginDir(t, "execprobe", "jobprobe")
	root := t.TempDir()

	t.Run("serve stops", func(t *testing.T) {
		s := jobsServe(t, bin, plugins, root, t.TempDir(), false)
		s.startBeating(t, "stop")
		beat := filepath.Join(root, "stop")
		if !jobsBeating(beat) {
			t.Fatal("the job does not run after its call")
		}
		if err := s.session.Close(); err != nil {
			t.Logf("close: %v", err)
		}
		if !jobsStops(beat, 10*time.Second) {
			t.Fatal("the job outlived toolhost serve")
		}
	})

	t.Run("kill -9, confined", func(t *testing.T) {
		s := jobsServe(t, bin, plugins, root, t.TempDir(), false)
		s.startBeating(t, "confined")
		if err := s.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if !jobsStops(filepath.Join(root, "confined"), 10*time.Second) {
			t.Fatal("a confined job outlived toolhost killed with SIGKILL")
		}
	})

	t.Run("kill -9, unconfined, then restart", func(t *testing.T) {
		home := t.TempDir()
		s := jobsServe(t, bin, plugins, root, home, true)
		s.startBeating(t, "unconfined")
		beat := filepath.Join(root, "unconfined")
		if err := s.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		// The client's transport reaps toolhost (its Close waits for the
		// process); a second Wait here would race it.
		s.session.Close()
		// Nothing kills an unconfined job with toolhost: it runs on
		// until the next start finds its record.
		if !jobsBeating(beat) {
			t.Fatal("the unconfined job died with toolhost; the restart below would prove nothing")
		}
		again := jobsServe(t, bin, plugins, root, home, true)
		if !jobsStops(beat, 10*time.Second) {
			t.Fatal("the unconfined job a killed toolhost left running survived the next start")
		}
		var list abi.JobResult
		again.call(t, "job_probe", map[string]any{"op": "list"}, &list)
		if len(list.Jobs) != 0 {
			t.Errorf("the new server lists %+v", list.Jobs)
		}
		if records, _ := os.ReadDir(filepath.Join(home, "state", "jobs")); len(records) != 0 {
			t.Errorf("job records left after the restart: %v", records)
		}
	})
}

// jobsProcess runs one call in conv, approved, and decodes its JSON
// content into out; it returns the call's error, if any.
func jobsProcess(t *testing.T, h *host.Host, conv, tool string, args map[string]any, out any) *engine.ToolError {
	t.Helper()
	b := engine.Batch{Conversation: conv, Calls: []engine.Call{call("c1", tool, jsonArgs(t, args))}}
	r := process(t, h, context.Background(), b, host.BatchOptions{Approver: approveAll()}, time.Minute)[0]
	if !r.OK {
		return r.Error
	}
	if err := json.Unmarshal([]byte(r.Content), out); err != nil {
		t.Fatalf("%s: %q: %v", tool, r.Content, err)
	}
	return nil
}

// Attack (model): a conversation names another conversation's job or
// kept output, to read it or kill it. Both are answered as ids that do not
// exist, in the same words as one that never existed, and the job runs
// on; the owner reads its long command's whole output by output_id.
func TestJobsConversationsAreApart(t *testing.T) {
	h, _ := openHost(t, func(c *config.Config, o *host.Options) {
		c.Tools.RunCommand.Sandbox, c.Tools.RunCommand.Network = config.SandboxOff, config.NetworkOn
		c.Tools.Output.MaxBytes = 4096
		o.StateDir = t.TempDir()
	}, "execprobe", "jobprobe")
	var started abi.ExecResult
	if e := jobsProcess(t, h, "owner", "exec_probe", map[string]any{"command": "echo secret-output; sleep 60", "background": true}, &started); e != nil {
		t.Fatalf("background: %+v", e)
	}
	// Its result is cut at the output limit, JSON and all: the id is read
	// off the front.
	b := engine.Batch{Conversation: "owner", Calls: []engine.Call{call("c1", "exec_probe", jsonArgs(t, map[string]any{"command": "seq 1 20000"}))}}
	r := process(t, h, context.Background(), b, host.BatchOptions{Approver: approveAll()}, time.Minute)[0]
	m := regexp.MustCompile(`"output_id":"(out-[0-9a-f]+)"`).FindStringSubmatch(r.Content)
	if !r.OK || m == nil {
		t.Fatalf("a long foreground command: %+v; want its output kept", r)
	}
	long := abi.ExecResult{OutputID: m[1]}
	var missing abi.JobResult
	never := jobsProcess(t, h, "intruder", "job_probe", map[string]any{"op": "output", "id": "job-0123456789abcdef01234567"}, &missing)
	for _, req := range []map[string]any{
		{"op": "output", "id": started.JobID},
		{"op": "kill", "id": started.JobID, "signal": "KILL"},
		{"op": "output", "id": long.OutputID, "since_byte": 0},
	} {
		var got abi.JobResult
		e := jobsProcess(t, h, "intruder", "job_probe", req, &got)
		if e == nil {
			t.Errorf("intruder's %v: %+v", req, got)
			continue
		}
		if never == nil || e.Kind != never.Kind || strings.Replace(e.Message, req["id"].(string), "ID", 1) != strings.Replace(never.Message, "job-0123456789abcdef01234567", "ID", 1) {
			t.Errorf("intruder's %v: %+v; want what an id that never existed gets: %+v", req, e, never)
		}
	}
	var list abi.JobResult
	if e := jobsProcess(t, h, "intruder", "job_probe", map[string]any{"op": "list"}, &list); e != nil || len(list.Jobs) != 0 {
		t.Errorf("intruder's list: %+v %+v", list, e)
	}
	var own abi.JobResult
	if e := jobsProcess(t, h, "owner", "job_probe", map[string]any{"op": "output", "id": started.JobID, "wait_ms": 5000}, &own); e != nil || !own.Job.Running || own.Job.Output != "secret-output\n" {
		t.Errorf("owner's job after the intruder's kill: %+v %+v", own.Job, e)
	}
	var kept abi.JobResult
	if e := jobsProcess(t, h, "owner", "job_probe", map[string]any{"op": "output", "id": long.OutputID, "since_byte": 108800, "max_bytes": 1000}, &kept); e != nil ||
		!strings.HasSuffix(kept.Job.Output, "\n19999\n20000\n") || kept.Job.TotalBytes != 108894 || kept.Job.Running {
		t.Errorf("owner's kept output from byte 108800: %+v %+v", kept.Job, e)
	}
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// commandTools are the tools these tests approve without asking.
var commandTools = []string{"--allow", "run_command", "--allow", "job_output", "--allow", "job_kill", "--allow", "job_list"}

// commandsServe is toolhost serve --stdio in w with the command tools
// allowed, and the process, so a test can kill it.
func commandsServe(t *testing.T, w *workspace) (*mcpServer, *exec.Cmd) {
	t.Helper()
	cmd := w.command(w.argv(append([]string{"serve", "--stdio"}, commandTools...)...)...)
	s := &mcpServer{stderr: &lockedBuffer{}, wire: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-e2e", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to toolhost serve --stdio: %v\nstderr: %s", err, s.stderr)
	}
	s.session = session
	t.Cleanup(func() {
		session.Close()
		if t.Failed() {
			t.Logf("toolhost serve stderr:\n%s", s.stderr)
		}
	})
	return s, cmd
}

// commandsCall calls tool and returns the result, its text, and its
// structured content (nil when there is none), failing the test past 60 s.
func commandsCall(t *testing.T, s *mcpServer, tool string, args map[string]any) (*mcp.CallToolResult, string, map[string]any, time.Duration) {
	t.Helper()
	start := time.Now()
	res, text := s.call(t, testContext(t), tool, args)
	var obj map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &obj)
	}
	return res, text, obj, time.Since(start)
}

// TestRunCommandAsAgentsUseIt: through the real binary over MCP, a
// command that would prompt returns at once, timeout_ms stops a sleep,
// env and stdin reach the command while a loader variable and a
// secret-looking name are refused with the reason, and 5 MB of output
// with the error at the end gives its head, its tail and a note whose
// output_id job_output reads whole.
func TestRunCommandAsAgentsUseIt(t *testing.T) {
	w := newWorkspace(t)
	s, _ := commandsServe(t, w)

	t.Run("prompts do not wait", func(t *testing.T) {
		// read at end of input, git's pager and credential prompts, npm's
		// questions: each returns instead of waiting for a person.
		res, text, _, took := commandsCall(t, s, "run_command", map[string]any{
			"command": `read x; echo "read:[$x] CI=$CI GIT_TERMINAL_PROMPT=$GIT_TERMINAL_PROMPT GIT_PAGER=$GIT_PAGER PAGER=$PAGER TERM=$TERM npm_config_yes=$npm_config_yes"`})
		if res.IsError || !strings.Contains(text, "read:[] CI=1 GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat PAGER=cat TERM=dumb npm_config_yes=true") {
			t.Errorf("isError %v, text %q", res.IsError, text)
		}
		if took > 10*time.Second {
			t.Errorf("took %v", took)
		}
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
		// A pager git would start on a terminal, and an HTTP remote that
		// asks for a password: git gives up instead of prompting.
		res, text, _, took = commandsCall(t, s, "run_command", map[string]any{
			"command": "git init -q r && cd r && git -c user.email=a@b -c user.name=a commit -q --allow-empty -m first && git log --oneline | cat && git -c credential.helper= ls-remote http://user@127.0.0.1:9/x 2>&1; echo status=$?"})
		if !strings.Contains(text, "first") || !strings.Contains(text, "status=128") || took > 20*time.Second {
			t.Errorf("git: isError %v, took %v, text %q", res.IsError, took, text)
		}
	})

	t.Run("timeout_ms", func(t *testing.T) {
		res, text, _, took := commandsCall(t, s, "run_command", map[string]any{"command": "echo before; sleep 30", "timeout_ms": 700})
		if !res.IsError || !strings.Contains(text, "timeout") || !strings.Contains(text, "before") || !strings.Contains(text, `"killed":"timeout"`) {
			t.Errorf("isError %v, text %q", res.IsError, text)
		}
		if took > 10*time.Second {
			t.Errorf("a 700 ms timeout took %v", took)
		}
	})

	t.Run("env and stdin", func(t *testing.T) {
		res, text, obj, _ := commandsCall(t, s, "run_command", map[string]any{
			"command": `printf '%s|' "$GREETING"; tr a-z A-Z`, "env": map[string]any{"GREETING": "hello there"}, "stdin": "from stdin\n"})
		if res.IsError || text != "hello there|FROM STDIN\n" {
			t.Errorf("isError %v, text %q", res.IsError, text)
		}
		if obj["exit_code"] != float64(0) || obj["killed"] != nil || obj["pipefail"] != true {
			t.Errorf("structured %v", obj)
		}
		for _, bad := range []struct{ name, why string }{
			{"LD_PRELOAD", "LD_PRELOAD"},
			{"GITHUB_TOKEN", "GITHUB_TOKEN"},
			{"TOOLHOST_STATE", "TOOLHOST_STATE"},
			{"BASH_ENV", "BASH_ENV"},
		} {
			res, text, _, _ := commandsCall(t, s, "run_command", map[string]any{"command": "touch ran-" + bad.name, "env": map[string]any{bad.name: "x"}})
			if !res.IsError || !strings.Contains(text, "BadArgs") || !strings.Contains(text, bad.why) {
				t.Errorf("env %s: isError %v, text %q", bad.name, res.IsError, text)
			}
			if fileExists(filepath.Join(w.dir, "ran-"+bad.name)) {
				t.Errorf("env %s: the command ran", bad.name)
			}
		}
	})

	t.Run("pipefail", func(t *testing.T) {
		res, text, _, _ := commandsCall(t, s, "run_command", map[string]any{"command": "false | cat"})
		if !res.IsError || !strings.Contains(text, "exit code 1") {
			t.Errorf("false | cat: isError %v, text %q", res.IsError, text)
		}
	})

	t.Run("5 MB with the error at the end", func(t *testing.T) {
		const body = 5_000_000
		res, text, _, _ := commandsCall(t, s, "run_command", map[string]any{
			"command": fmt.Sprintf("yes 'a line of build output' | head -c %d; echo; echo 'FATAL: it broke at the very end' >&2; exit 2", body)})
		if !res.IsError || !strings.Contains(text, "exit code 2") || !strings.Contains(text, "FATAL: it broke at the very end") {
			t.Fatalf("isError %v, text %.500q ... %.500q", res.IsError, text, text[max(0, len(text)-500):])
		}
		if !strings.Contains(text, "a line of build output\na line") || !regexp.MustCompile(`\[\.\.\. \d+ lines, \d+ bytes of stdout omitted; job_output`).MatchString(text) {
			t.Errorf("no head or omission note in %.2000q", text)
		}
		if len(text) > 200<<10 {
			t.Errorf("the result is %d bytes", len(text))
		}
		id := regexp.MustCompile(`"output_id":"(out-[A-Za-z0-9_-]+)"`).FindStringSubmatch(text)
		if id == nil {
			t.Fatalf("no output_id in %.3000q", text)
		}
		// job_output reads the whole, in pieces, each continuing where the
		// last stopped.
		var whole strings.Builder
		for i := 0; ; i++ {
			res, text, obj, _ := commandsCall(t, s, "job_output", map[string]any{"id": id[1]})
			if res.IsError || obj == nil {
				t.Fatalf("job_output %s: isError %v, %.300q", id[1], res.IsError, text)
			}
			// The text is the output, then the job's status line.
			body := text[:strings.LastIndex(strings.TrimSuffix(text, "\n"), "\n")+1]
			if !strings.HasPrefix(text[len(body):], "[job "+id[1]) {
				t.Fatalf("job_output text does not end with its status line: %.300q", text[len(body):])
			}
			// A piece that ends mid-line gets a newline before the status.
			n := int(obj["next_byte"].(float64) - obj["from_byte"].(float64))
			if n > len(body) || (body[n:] != "" && body[n:] != "\n") {
				t.Fatalf("job_output returned %d bytes of text for %v", len(body), obj)
			}
			whole.WriteString(body[:n])
			if obj["next_byte"].(float64) >= obj["total_bytes"].(float64) {
				if obj["exit_code"] != float64(2) || obj["running"] != false {
					t.Errorf("the kept output's end does not say how the command ended: %v", obj)
				}
				break
			}
			if i > 200 {
				t.Fatalf("job_output did not reach the end: %v", obj)
			}
		}
		got := whole.String()
		// stdout and stderr come through two pipes: the error line may
		// land anywhere after the last stdout the readers had taken.
		want := strings.Repeat("a line of build output\n", body/23+1)[:body] + "\n"
		rest, found := strings.CutSuffix(got, "FATAL: it broke at the very end\n")
		if i := strings.LastIndex(got, "FATAL: it broke at the very end\n"); !found && i >= 0 {
			rest, found = got[:i]+got[i+len("FATAL: it broke at the very end\n"):], true
		}
		if !found || rest != want {
			t.Errorf("job_output read %d bytes, not the command's %d bytes of stdout and its error line", len(got), body)
		}

	})
}

// commandsMarker is a name no other process has: a job's command line
// carries it, so the test finds the job's processes on the host.
func commandsMarker(t *testing.T) string {
	return "mark" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// commandsPIDs are the host's processes whose command line holds marker.
func commandsPIDs(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func commandsWaitGone(t *testing.T, marker, when string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); len(commandsPIDs(marker)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("%s: processes %v of the job still run", when, commandsPIDs(marker))
			return
		}
	}
}

// commandsStartJob starts command in the background and returns its id.
func commandsStartJob(t *testing.T, s *mcpServer, command string) string {
	t.Helper()
	res, text, obj, took := commandsCall(t, s, "run_command", map[string]any{"command": command, "background": true})
	if res.IsError || obj == nil || obj["job_id"] == nil {
		t.Fatalf("background %q: isError %v, %q", command, res.IsError, text)
	}
	if took > 10*time.Second {
		t.Errorf("a background start took %v", took)
	}
	return obj["job_id"].(string)
}

// TestBackgroundJobs: a server started in the background is polled with
// job_output (new bytes only) and killed with job_kill; one left running
// is gone once toolhost stops; another conversation cannot see it.
func TestBackgroundJobs(t *testing.T) {
	w := newWorkspace(t)
	s, _ := commandsServe(t, w)
	marker := commandsMarker(t)
	if err := os.Mkdir(filepath.Join(w.dir, marker), 0o755); err != nil {
		t.Fatal(err)
	}
	server := commandsStartJob(t, s, "exec python3 -u -m http.server 0 --bind 127.0.0.1 --directory "+marker)
	res, text, obj, _ := commandsCall(t, s, "job_output", map[string]any{"id": server, "wait_ms": 15000})
	if res.IsError || !strings.Contains(text, "Serving HTTP on 127.0.0.1 port") || obj["running"] != true {
		t.Fatalf("job_output of the server: isError %v, %q", res.IsError, text)
	}

	loop := commandsStartJob(t, s, "i=0; while :; do i=$((i+1)); echo tick $i; sleep 0.1; done")
	_, _, first, _ := commandsCall(t, s, "job_output", map[string]any{"id": loop, "wait_ms": 5000})
	time.Sleep(400 * time.Millisecond)
	_, text, second, _ := commandsCall(t, s, "job_output", map[string]any{"id": loop, "wait_ms": 5000})
	if first == nil || second == nil || second["from_byte"] != first["next_byte"] || strings.Contains(text, "tick 1\n") {
		t.Errorf("the second job_output did not continue where the first stopped: first %v, second %v", first, second)
	}
	res, text, obj, _ = commandsCall(t, s, "job_kill", map[string]any{"id": loop})
	if res.IsError || obj["running"] != false || !strings.Contains(text, "killed") {
		t.Errorf("job_kill: isError %v, %q", res.IsError, text)
	}
	_, text, _, _ = commandsCall(t, s, "job_list", map[string]any{})
	if !strings.Contains(text, server+"  running") || !strings.Contains(text, loop+"  killed") {
		t.Errorf("job_list:\n%s", text)
	}

	// Another session is another conversation: it sees no job.
	other, _ := commandsServe(t, w)
	_, text, _, _ = commandsCall(t, other, "job_list", map[string]any{})
	if strings.Contains(text, server) {
		t.Errorf("another conversation lists the job:\n%s", text)
	}
	res, text, _, _ = commandsCall(t, other, "job_kill", map[string]any{"id": server})
	if !res.IsError {
		t.Errorf("another conversation killed the job: %q", text)
	}
	if len(commandsPIDs(marker)) == 0 {
		t.Fatal("the server job is not running before toolhost stops: the test proves nothing")
	}
	s.session.Close()
	commandsWaitGone(t, marker, "toolhost serve stopped")
}

// TestBackgroundJobsDieWithAKilledHost: kill -9 of toolhost leaves no
// job running once a new toolhost has started, confined or not.
func TestBackgroundJobsDieWithAKilledHost(t *testing.T) {
	for _, confined := range []bool{true, false} {
		t.Run(fmt.Sprintf("confined=%v", confined), func(t *testing.T) {
			w := newWorkspace(t)
			if !confined {
				w = w.unconfined()
			}
			s, cmd := commandsServe(t, w)
			marker := commandsMarker(t)
			commandsStartJob(t, s, "python3 -c 'import time; time.sleep(1000)' "+marker+" & wait")
			for deadline := time.Now().Add(10 * time.Second); len(commandsPIDs(marker)) == 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the job did not start")
				}
			}
			// kill -9; the client's transport reaps it (its Close waits
			// for the process, so the test must not wait too).
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatalf("kill -9 toolhost: %v", err)
			}
			s.session.Close()
			next, _ := commandsServe(t, w)
			commandsCall(t, next, "job_list", map[string]any{})
			commandsWaitGone(t, marker, "kill -9 and a restart")
		})
	}
}

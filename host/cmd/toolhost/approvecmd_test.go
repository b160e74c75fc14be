package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/server"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// approveTestToken is the bearer token of the servers these tests start.
const approveTestToken = "approve-test-token-0123456789"

// heldServer is a real toolhost server, serving the built-in plugins
// over HTTP on a loopback port, whose writes wait for a person's
// decision: the server `toolhost approve` decides for.
type heldServer struct {
	t    *testing.T
	url  string
	root string // the directory the tools may touch
}

// serveHeld starts a server for the test, and points the test's
// environment at it: its token in $TOOLHOST_TOKEN, no configuration or
// server address of the developer's.
func serveHeld(t *testing.T) *heldServer {
	t.Helper()
	isolateApprove(t)
	t.Setenv(tokenEnv, approveTestToken)
	root := t.TempDir()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	// A new file would be written without asking: every write asks here.
	cfg.Tools.Approval.AutoApproveNewFiles = false
	ctx := context.Background()
	h, err := host.Open(ctx, host.Options{PluginDir: testplugin.BuiltIns(t), Config: cfg, CacheDir: testplugin.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(ctx) })
	s, err := server.New(h, server.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := server.Listen("127.0.0.1:0", false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- s.ServeHTTPOn(ctx, ln, server.HTTPOptions{Token: approveTestToken}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeHTTPOn: %v", err)
		}
	})
	return &heldServer{t: t, url: server.URL(ln.Addr(), ""), root: root}
}

// isolateApprove keeps the developer's configuration, token and server
// address out of the test.
func isolateApprove(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, v := range []string{"TOOLHOST_CONFIG", tokenEnv, urlEnv} {
		t.Setenv(v, "") // restored when the test ends
		os.Unsetenv(v)
	}
	t.Chdir(t.TempDir())
}

// apiBatch is a batch as the API answers it, as far as the tests read it.
type apiBatch struct {
	BatchID   string          `json:"batch_id"`
	State     string          `json:"state"`
	DecidedBy string          `json:"decided_by"`
	Results   []engine.Result `json:"results"`
}

// api sends a request as an agent (or another person) would, and
// decodes the answer, which must have status want.
func (s *heldServer) api(method, path string, body any, want int) apiBatch {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+approveTestToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, out, want)
	}
	var b apiBatch
	if err := json.Unmarshal(out, &b); err != nil {
		s.t.Fatalf("%s %s: %v in %s", method, path, err, out)
	}
	return b
}

// hold posts a batch of a write_file call for each file, which waits
// for a decision, and returns its id.
func (s *heldServer) hold(files ...string) string {
	s.t.Helper()
	var calls []map[string]any
	for i, f := range files {
		calls = append(calls, map[string]any{"id": fmt.Sprintf("w%d", i+1), "name": "write_file",
			"arguments": map[string]any{"path": f, "content": "written by " + f + "\n"}})
	}
	b := s.api("POST", "/v1/batches", map[string]any{"conversation_id": "approve-test", "calls": calls}, http.StatusCreated)
	if b.State != stateAwaitingApproval {
		s.t.Fatalf("the batch is %s, want it awaiting a decision", b.State)
	}
	return b.BatchID
}

// ended is batch id once it ran.
func (s *heldServer) ended(id string) apiBatch {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b := s.api("GET", "/v1/batches/"+id, nil, http.StatusOK)
		if b.State == "done" || b.State == "cancelled" {
			return b
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("batch %s is still %s", id, b.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// written reports whether the write of file ran.
func (s *heldServer) written(file string) bool {
	b, err := os.ReadFile(filepath.Join(s.root, file))
	return err == nil && string(b) == "written by "+file+"\n"
}

// approveRun runs toolhost approve args in this process, as main does,
// with stdin in (nil for none) and standard error errw, where it writes
// the message main would print; it returns the exit code and standard
// output.
func approveRun(ctx context.Context, in *os.File, errw io.Writer, args ...string) (code int, stdout string) {
	var out bytes.Buffer
	cmd := newRootCommand()
	cmd.SetArgs(append([]string{"approve"}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(errw)
	if in != nil {
		cmd.SetIn(in)
	} else {
		cmd.SetIn(strings.NewReader(""))
	}
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK, out.String()
	}
	code = exitUsage
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintln(errw, "toolhost:", err)
	return code, out.String()
}

// approve runs toolhost approve args without a terminal.
func approve(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var errw bytes.Buffer
	code, stdout = approveRun(context.Background(), nil, &errw, args...)
	return code, stdout, errw.String()
}

// Flags that do not go together are usage errors, said before the
// server is asked anything.
func TestApproveUsage(t *testing.T) {
	isolateApprove(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"b1", "b2"}, "at most one batch id"},
		{[]string{"--watch"}, "--watch goes with -i"},
		{[]string{"-i", "b1"}, "-i asks about every call"},
		{[]string{"--all", "b1"}, "a batch id or --all"},
		{[]string{"--calls", "w1"}, "--calls names calls of one batch"},
		{[]string{"b1", "--calls", "w1", "--deny"}, "give one of them"},
		{[]string{"--deny"}, "--deny needs a batch id"},
		{[]string{"b1", "--reason", "no"}, "--reason says why calls are denied"},
		{[]string{"b1", "--calls", ""}, "names no call"},
		{[]string{"--url", "ftp://x"}, "is not a server's address"},
		{[]string{"-i"}, "standard input is not one"},
		{nil, "no bearer token"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := approve(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, %q; want %d saying %q", code, stderr, exitUsage, tt.want)
			}
		})
	}
}

// The address may be given as toolhost serve prints it.
func TestApproveServerURL(t *testing.T) {
	t.Setenv(urlEnv, "127.0.0.1:9999")
	tests := []struct{ flag, want string }{
		{"", "http://127.0.0.1:9999"},
		{"http://127.0.0.1:8765/mcp", "http://127.0.0.1:8765"},
		{"http://localhost:8765/mcp/reviewer", "http://localhost:8765"},
		{"127.0.0.1:1234/", "http://127.0.0.1:1234"},
		{"https://example.test/toolhost/", "https://example.test/toolhost"},
	}
	for _, tt := range tests {
		if got, err := serverURL(tt.flag); err != nil || got != tt.want {
			t.Errorf("serverURL(%q) = %q, %v; want %q", tt.flag, got, err, tt.want)
		}
	}
}

// Against a real server: the list shows each held call, and each way of
// deciding reaches the calls' results, naming toolhost approve.
func TestApproveDecides(t *testing.T) {
	s := serveHeld(t)

	code, out, stderr := approve(t, "--url", s.url)
	if code != exitOK || out != "nothing awaits a decision at "+s.url+"\n" {
		t.Errorf("an empty queue: exit %d, %q %q", code, out, stderr)
	}

	tests := []struct {
		name    string
		files   []string
		args    []string // after the batch id
		say     string
		written []bool
		denied  string // in the denied calls' results
	}{
		{"approve", []string{"a.txt"}, nil, "approved batch", []bool{true}, ""},
		{"deny with a reason", []string{"b.txt"}, []string{"--deny", "--reason", "use a temp dir"}, "denied batch", []bool{false}, "use a temp dir"},
		{"approve some", []string{"c.txt", "d.txt"}, []string{"--calls", "w2", "--reason", "not c"}, "denied the others: call w1 (write_file)", []bool{false, true}, "not c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := s.hold(tt.files...)
			code, out, stderr := approve(t, "--url", s.url)
			rows := strings.Split(out, "\n")
			if code != exitOK || len(rows) != len(tt.files)+3 || !strings.HasPrefix(rows[len(rows)-2], "decide: toolhost approve "+id) {
				t.Fatalf("list: exit %d\n%s%s", code, out, stderr)
			}
			for i, row := range rows[1 : 1+len(tt.files)] {
				if f := strings.Fields(row); len(f) < 5 || f[0] != id || f[1] != fmt.Sprintf("w%d", i+1) || f[2] != "write_file" || !strings.Contains(row, tt.files[i]) {
					t.Errorf("row %q; want batch, call, tool, risk and a summary naming %s", row, tt.files[i])
				}
			}

			code, out, stderr = approve(t, append([]string{id, "--url", s.url}, tt.args...)...)
			if code != exitOK || !strings.Contains(out, tt.say) {
				t.Fatalf("exit %d, %q %q; want it to say %q", code, out, stderr, tt.say)
			}
			b := s.ended(id)
			if b.DecidedBy != `the batch API's client "toolhost approve"` {
				t.Errorf("decided_by %q", b.DecidedBy)
			}
			for i, f := range tt.files {
				if got := s.written(f); got != tt.written[i] {
					t.Errorf("%s written: %v, want %v", f, got, tt.written[i])
				}
				r := b.Results[i]
				if tt.written[i] {
					if !r.OK {
						t.Errorf("result %+v", r.Error)
					}
					continue
				}
				if r.OK || !strings.Contains(r.Error.Message, `Denied by the batch API's client "toolhost approve"`) || !strings.Contains(r.Error.Message, tt.denied) {
					t.Errorf("denied call's result %+v; want it to name toolhost approve and give %q", r.Error, tt.denied)
				}
			}
		})
	}

	t.Run("all", func(t *testing.T) {
		ids := []string{s.hold("e.txt"), s.hold("f.txt")}
		code, out, stderr := approve(t, "--all", "--url", s.url)
		if code != exitOK || strings.Count(out, "approved batch") != 2 {
			t.Fatalf("exit %d, %q %q", code, out, stderr)
		}
		for i, f := range []string{"e.txt", "f.txt"} {
			s.ended(ids[i])
			if !s.written(f) {
				t.Errorf("%s not written", f)
			}
		}
	})
}

// Each way approve can fail says what went wrong and what to do, and
// exits 1; the token is never shown.
func TestApproveErrors(t *testing.T) {
	s := serveHeld(t)
	id := s.hold("a.txt")
	decided := s.hold("b.txt")
	s.api("POST", "/v1/batches/"+decided+"/decision", map[string]any{"decision": "deny_all"}, http.StatusOK)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + ln.Addr().String()
	ln.Close()
	configFile := filepath.Join(t.TempDir(), "toolhost.toml")
	if err := os.WriteFile(configFile, []byte("[server]\ntoken = \"wrong-token-from-config\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		token string // "" unsets $TOOLHOST_TOKEN
		args  []string
		want  []string
	}{
		{"token from the environment refused", "wrong-token-in-the-env", []string{"--url", s.url},
			[]string{"refused the bearer token from $TOOLHOST_TOKEN (401 Unauthorized)", s.url}},
		{"token from the configuration refused", "", []string{"--url", s.url, "--config", configFile},
			[]string{"refused the bearer token from server.token in the configuration (401 Unauthorized)"}},
		{"no server", approveTestToken, []string{"--url", nobody},
			[]string{"cannot reach a toolhost server at " + nobody, "toolhost serve --http ADDR", "--url"}},
		{"unknown batch", approveTestToken, []string{"no-such-batch", "--url", s.url},
			[]string{"no batch no-such-batch on the server at " + s.url, "toolhost approve lists"}},
		{"call not in the batch", approveTestToken, []string{id, "--calls", "w1", "--calls", "w9", "--url", s.url},
			[]string{"batch " + id + " has no call w9 awaiting a decision; its calls awaiting one are call w1 (write_file)"}},
		{"decided by someone else", approveTestToken, []string{decided, "--url", s.url},
			[]string{"batch " + decided + " was already decided, by the batch API's client", "nothing was changed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.token == "" {
				os.Unsetenv(tokenEnv)
			} else {
				os.Setenv(tokenEnv, tt.token)
			}
			code, _, stderr := approve(t, tt.args...)
			if code != exitToolError {
				t.Errorf("exit %d, want %d", code, exitToolError)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, tok := range []string{"wrong-token-in-the-env", "wrong-token-from-config", approveTestToken} {
				if strings.Contains(stderr, tok) {
					t.Errorf("stderr shows a token:\n%s", stderr)
				}
			}
		})
	}
	if s.written("a.txt") {
		t.Error("a failed approve ran the write")
	}
}

// screen is a pseudo-terminal a person would sit at: approve -i reads
// its answers from it and asks on it.
type screen struct {
	t   *testing.T
	pty *os.File // the person's side
	tty *os.File // approve's side

	mu    sync.Mutex
	shown bytes.Buffer
}

func newScreen(t *testing.T) *screen {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 50, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	sc := &screen{t: t, pty: ptmx, tty: tty}
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			sc.mu.Lock()
			sc.shown.Write(buf[:n])
			sc.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
		<-read
	})
	return sc
}

// waitFor returns what the screen showed once it shows s n times, line
// ends as "\n".
func (sc *screen) waitFor(s string, n int) string {
	sc.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		sc.mu.Lock()
		shown := strings.ReplaceAll(sc.shown.String(), "\r\n", "\n")
		sc.mu.Unlock()
		if strings.Count(shown, s) >= n {
			return shown
		}
		if time.Now().After(deadline) {
			sc.t.Fatalf("the terminal never showed %q %d times; it shows:\n%s", s, n, shown)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (sc *screen) typeLine(line string) {
	sc.t.Helper()
	if _, err := io.WriteString(sc.pty, line+"\r"); err != nil {
		sc.t.Fatal(err)
	}
}

// On a terminal, -i --watch waits for held calls, rings the bell when
// some come, asks about each as toolhost call asks (v shows every
// argument in full, then asks again), and sends the answers of a batch
// as one decision; an answer to a batch
// someone else decided meanwhile is not sent, and says so; Ctrl-C ends
// it with exit 0.
func TestApproveInteractiveWatch(t *testing.T) {
	s := serveHeld(t)
	sc := newScreen(t)
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	type exit struct {
		code int
		out  string
	}
	ended := make(chan exit, 1)
	go func() {
		code, out := approveRun(ctx, sc.tty, sc.tty, "-i", "--watch", "--url", s.url)
		ended <- exit{code, out}
	}()
	sc.waitFor("waiting for calls to decide at "+s.url, 1)

	// Typed while nothing was asked: must not answer what comes.
	sc.typeLine("y")
	time.Sleep(100 * time.Millisecond)
	id := s.hold("a.txt", "c.txt")
	shown := sc.waitFor("Approve call w1? [y/N] ", 1)
	waited := shown[strings.Index(shown, "waiting for calls"):]
	if !strings.Contains(waited, "\a") {
		t.Errorf("no bell when the call came:\n%q", waited)
	}
	for _, want := range []string{
		"call w1 (write_file) will run with these arguments:",
		"\n  path: a.txt\n",
		"┏━ toolhost asks about call w1 (write_file)",
		"y runs it, v shows every argument in full, anything else denies it",
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("the question lacks %q:\n%s", want, shown)
		}
	}
	if s.written("a.txt") {
		t.Fatal("a line typed before the question approved the call")
	}
	sc.typeLine("v")
	sc.waitFor("Approve call w1? [y/N] ", 2)
	sc.typeLine("y")
	sc.waitFor("Approve call w2? [y/N] ", 1)
	sc.typeLine("n")
	sc.waitFor("approved call w1 (write_file) of batch "+id+"; it runs now; denied the others: call w2 (write_file)", 1)
	b := s.ended(id)
	if !s.written("a.txt") || s.written("c.txt") || b.DecidedBy != `the batch API's client "toolhost approve"` {
		t.Errorf("after y and n: a.txt written %v, c.txt written %v, decided by %q", s.written("a.txt"), s.written("c.txt"), b.DecidedBy)
	}

	// Back to waiting; a batch decided elsewhere while the question is
	// on the screen keeps that decision.
	sc.waitFor("waiting for calls to decide", 2)
	other := s.hold("b.txt")
	sc.waitFor("Approve call w1? [y/N] ", 3)
	s.api("POST", "/v1/batches/"+other+"/decision", map[string]any{"decision": "deny_all"}, http.StatusOK)
	sc.typeLine("y")
	sc.waitFor("your answers were not sent: batch "+other+" was already decided, by the batch API's client", 1)
	if s.ended(other); s.written("b.txt") {
		t.Error("the answer overrode the decision taken first")
	}

	sc.waitFor("waiting for calls to decide", 3)
	interrupt()
	select {
	case e := <-ended:
		if e.code != exitOK {
			t.Errorf("Ctrl-C: exit %d, want 0", e.code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("approve -i --watch did not end at Ctrl-C")
	}
}

package hostile_test

// Attacks on the web console (/console), its session and the decisions
// it and toolhost approve send through POST /v1/batches/ID/decision:
// from a page of another port on this machine, from a prompt-injected
// model whose call ids and arguments the console shows, and from a local
// client holding a session. Each test says the attack it keeps out, what
// was at fault when it was found, and how that was mended.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/toolhost/toolhost/internal/testenv"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// crServer is `toolhost serve --http` started from the built binary,
// asking before every side effect, with its console's login link.
type crServer struct {
	root, home, base, port, token, link string
	stderr                              *approvalViewText
}

var crConsoleLink = regexp.MustCompile(`web console: (http://\S+/console/login\?code=\S+)`)

// crServe starts the server; args are more flags of serve.
func crServe(t *testing.T, args ...string) *crServer {
	t.Helper()
	bin := toolhostBinary(t)
	home, root := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, "operator.toml")
	if err := os.WriteFile(cfg, []byte("[tools.approval]\nmode = \"prompt\"\ndenylist = []\nauto_approve_new_files = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", realPlugins(t),
		"serve", "--http", "127.0.0.1:0", "--root", root}, args...)...)
	cmd.Dir = root
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLHOST_TOKEN=") && !strings.HasPrefix(kv, "TOOLHOST_URL=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	stderr := &approvalViewText{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("toolhost serve stderr:\n%s", stderr)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := stderr.String()
		m, tm, lm := approvalViewEndpoint.FindStringSubmatch(out), approvalViewToken.FindStringSubmatch(out), crConsoleLink.FindStringSubmatch(out)
		if m != nil && tm != nil && lm != nil {
			u, err := url.Parse(m[1])
			if err != nil {
				t.Fatal(err)
			}
			return &crServer{root: root, home: home, base: m[1], port: u.Port(), token: tm[1], link: lm[1], stderr: stderr}
		}
		select {
		case <-exited:
			t.Fatalf("toolhost serve exited (%v) before listening:\n%s", waitErr, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolhost serve printed no endpoint and console link within 30 s:\n%s", out)
		}
	}
}

// api sends a request with the bearer token and decodes the JSON answer
// into v (nil ignores it).
func (s *crServer) api(t *testing.T, method, path string, body any, v any) int {
	t.Helper()
	return crDo(t, http.DefaultClient, method, s.base+path, body, v, map[string]string{"Authorization": "Bearer " + s.token})
}

func crDo(t *testing.T, hc *http.Client, method, u string, body any, v any, headers map[string]string) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, val := range headers {
		req.Header.Set(k, val)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %d, the answer is not JSON: %v\n%s", method, u, resp.StatusCode, err, data)
		}
	}
	return resp.StatusCode
}

// crSession is a console session opened as a browser does, with the
// login link: the cookie it sets, and the key its redirect hands the
// page in the fragment, which the page sends with every request.
type crSession struct {
	hc  *http.Client
	key string
}

// header is what the console's page sends with each request.
func (c *crSession) header() map[string]string {
	return map[string]string{"X-Toolhost-Console-Key": c.key}
}

func (s *crServer) session(t *testing.T) *crSession {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(s.link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	key, ok := strings.CutPrefix(resp.Header.Get("Location"), "/console#key=")
	if !ok {
		t.Fatalf("the login link redirected to %q; want /console#key=KEY", resp.Header.Get("Location"))
	}
	c := &crSession{hc: hc, key: key}
	if code := crDo(t, hc, "GET", s.base+"/console/api/state", nil, nil, c.header()); code != http.StatusOK {
		t.Fatalf("GET /console/api/state of a fresh session: %d", code)
	}
	return c
}

// crState is the console's state answer.
type crState struct {
	Batches []struct {
		ID        string `json:"id"`
		State     string `json:"state"`
		DecidedBy string `json:"decided_by"`
		Calls     []struct {
			N         int    `json:"n"`
			ID        string `json:"id"`
			RawID     string `json:"raw_id"`
			Tool      string `json:"tool"`
			Status    string `json:"status"`
			Arguments string `json:"arguments"`
		} `json:"calls"`
	} `json:"batches"`
}

// crBatch posts a batch through /v1 and returns its id, checking it
// waits for a decision.
func (s *crServer) batch(t *testing.T, conv string, calls ...map[string]any) string {
	t.Helper()
	var b struct {
		BatchID string `json:"batch_id"`
		State   string `json:"state"`
	}
	if code := s.api(t, "POST", "/v1/batches", map[string]any{"conversation_id": conv, "calls": calls}, &b); code != http.StatusCreated || b.State != "awaiting_approval" {
		t.Fatalf("POST /v1/batches: %d, state %q; want a batch awaiting approval", code, b.State)
	}
	return b.BatchID
}

func crWrite(id, path, content string) map[string]any {
	return map[string]any{"id": id, "name": "write_file", "arguments": map[string]any{"path": path, "content": content}}
}

// waitDone waits until batch id of s is done.
func (s *crServer) waitDone(t *testing.T, id string) {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var b struct {
			State string `json:"state"`
		}
		s.api(t, "GET", "/v1/batches/"+id, nil, &b)
		if b.State == "done" {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("batch %s is %q after 15 s, want done", id, b.State)
		}
	}
}

// TestConsoleRedteamCallIDsThatLookAlikeApproveTheOtherCall kept out a finding:
// the console names a call by its id as rendered visibly (engine.Visible:
// U+200B becomes the text "<U+200B>", a newline "⏎"), and approve_selected
// sends that rendering back as the call's id. A model that gives one
// call the id "w\u200b" (a harmless write) and another the id
// "w<U+200B>" spelled out (the harmful one) gets two calls the console
// shows with the same id, the same checkbox label and the same
// selection key: ticking the harmless one approves the harmful one.
// Even alone, a call whose id holds such a character cannot be approved
// by itself in the console. At fault: consoleView (console.go) sends
// engine.Visible(c.ID) as the call's id, and console.js keys the
// selection on it; toolhost approve --calls matches the same rendering.
// Fix: give the console the call's number (n) or its raw id to send
// back, and show the rendering only as text.
func TestConsoleRedteamCallIDsThatLookAlikeApproveTheOtherCall(t *testing.T) {
	s := crServe(t)
	id := s.batch(t, "lookalike",
		crWrite("w\u200b", "notes.txt", "harmless\n"),
		crWrite("w<U+200B>", "PWNED.txt", "harmful\n"))
	c := s.session(t)
	var st crState
	crDo(t, c.hc, "GET", s.base+"/console/api/state", nil, &st, c.header())
	var shown []string
	var harmless string
	for _, b := range st.Batches {
		if b.ID != id {
			continue
		}
		for _, call := range b.Calls {
			shown = append(shown, call.ID)
			if strings.Contains(call.Arguments, "notes.txt") {
				harmless = call.RawID
			}
		}
	}
	if len(shown) != 2 || harmless == "" {
		t.Fatalf("the console shows calls %q of batch %s, want 2 with the write of notes.txt among them", shown, id)
	}
	if shown[0] == shown[1] {
		t.Errorf("the console names two different calls with the same id %q: a person cannot tell which one a checkbox selects", shown[0])
	}
	// What the console sends when the person ticks the harmless call and
	// presses "Approve selected": the id it selected, raw.
	code := crDo(t, c.hc, "POST", s.base+"/v1/batches/"+id+"/decision",
		map[string]any{"decision": "approve_selected", "ids": []string{harmless}}, nil, c.header())
	if code != http.StatusOK {
		t.Fatalf("approve_selected of the call the console shows as %q: %d; the console cannot approve that call alone", harmless, code)
	}
	s.waitDone(t, id)
	if _, err := os.Stat(filepath.Join(s.root, "PWNED.txt")); err == nil {
		t.Errorf("PWNED.txt was written: selecting the call the console shows writing notes.txt approved the other call")
	}
	if _, err := os.Stat(filepath.Join(s.root, "notes.txt")); err != nil {
		t.Errorf("notes.txt, the call selected, was not written: %v", err)
	}
}

// crBrowser starts Debian's chromium headless, as the e2e console tests
// do.
func crBrowser(t *testing.T) context.Context {
	t.Helper()
	path := testenv.LookPath(t, "chromium", "apt-get install chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

func crRun[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

// crEval evaluates js in the page, polling until it is true (or 15 s).
func crWaitJS(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	for end := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if crRun(t, ctx, chromedp.Evaluate[bool](js)) {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the page never made %s true; it reads:\n%s", js, crRun(t, ctx, chromedp.Evaluate[string](`document.body.innerText`)))
		}
	}
}

// TestConsoleRedteamSessionCookieGoesToOtherLocalPorts kept out a finding: the
// console's session cookie toolhost_console_PORT is scoped to the host
// (cookies never tell ports apart), so the browser sends it to every
// server on 127.0.0.1: a dev server the model wrote, or any local
// process the person's browser visits, receives the session in its
// request headers. SameSite=Strict does not help (another port is the
// same site), nor does the Origin check (the thief replays the cookie
// from outside a browser, sending no Origin): with the cookie alone,
// GET /console/api/state hands over the anti-CSRF token, and the thief
// approves whatever is held. At fault: consoleLogin (console.go) makes
// the cookie the whole credential, and consoleState gives the CSRF
// token to any holder of it. Fix: make the cookie insufficient alone,
// e.g. hand the page a second secret in the login redirect's fragment,
// kept in sessionStorage (which is per origin, port included) and sent
// as a header on every request (the event stream read with fetch rather
// than EventSource), or serve the console on a host name of its own.
func TestConsoleRedteamSessionCookieGoesToOtherLocalPorts(t *testing.T) {
	s := crServe(t)
	// Another local server, on another port of the same address.
	var mu sync.Mutex
	var got []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Cookie"))
		mu.Unlock()
		io.WriteString(w, "<!doctype html><title>dev server</title><p>hello")
	})}
	go other.Serve(ln)
	t.Cleanup(func() { other.Close() })

	ctx := crBrowser(t)
	crRun(t, ctx, chromedp.Navigate(s.link))
	crWaitJS(t, ctx, `document.getElementById("awaiting-count") !== null && document.getElementById("status").textContent.startsWith("live")`)
	// The person later opens another local page in the same browser.
	crRun(t, ctx, chromedp.Navigate("http://"+ln.Addr().String()+"/"))

	mu.Lock()
	headers := strings.Join(got, "\n")
	mu.Unlock()
	name := "toolhost_console_" + s.port
	var stolen string
	for _, c := range strings.Split(headers, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(c), "="); ok && k == name {
			stolen = v
		}
	}
	if stolen == "" {
		return // the session stayed with the console's own port
	}
	// Cookies ignore ports: the cookie goes there, so it must open
	// nothing by itself. What the thief does with it, from outside a
	// browser:
	id := s.batch(t, "stolen", crWrite("w", "PWNED.txt", "harmful\n"))
	jar := map[string]string{"Cookie": name + "=" + stolen}
	for _, path := range []string{"/console/api/state", "/v1/batches", "/v1/batches/" + id} {
		if code := crDo(t, http.DefaultClient, "GET", s.base+path, nil, nil, jar); code != http.StatusUnauthorized {
			t.Errorf("GET %s with the stolen cookie alone: %d; want 401", path, code)
		}
	}
	if code := crDo(t, http.DefaultClient, "POST", s.base+"/v1/batches/"+id+"/decision", map[string]any{"decision": "approve_all"}, nil, jar); code == http.StatusOK {
		s.waitDone(t, id)
		t.Errorf("with the stolen cookie alone the thief approved batch %s (PWNED.txt written)", id)
	}
}

// TestConsoleRedteamApproveCallsSplitsAnIDAtItsComma kept out a finding:
// toolhost approve BATCH --calls ID,ID splits its value at commas (a
// string slice flag), and a call id may hold a comma. A model that
// names a harmless call "x,y" and two harmful ones "x" and "y" gets the
// person who types the id the listing shows (--calls x,y) to approve
// the two harmful calls and deny the one they meant. At fault:
// newApproveCommand (approvecmd.go) reads --calls with StringSliceVar.
// Fix: take --calls as repeatable whole ids (StringArrayVar), or refuse
// a value naming an id that is awaiting as a whole when it is split.
func TestConsoleRedteamApproveCallsSplitsAnIDAtItsComma(t *testing.T) {
	s := crServe(t)
	id := s.batch(t, "comma",
		crWrite("x,y", "notes.txt", "harmless\n"),
		crWrite("x", "PWNED_x.txt", "harmful\n"),
		crWrite("y", "PWNED_y.txt", "harmful\n"))
	cmd := exec.Command(toolhostBinary(t), "approve", id, "--calls", "x,y", "--url", s.base)
	cmd.Env = append(os.Environ(), "TOOLHOST_TOKEN="+s.token, "HOME="+s.home)
	out, err := cmd.CombinedOutput()
	t.Logf("toolhost approve %s --calls x,y: %v\n%s", id, err, out)
	if err == nil {
		s.waitDone(t, id)
	}
	for _, f := range []string{"PWNED_x.txt", "PWNED_y.txt"} {
		if _, err := os.Stat(filepath.Join(s.root, f)); err == nil {
			t.Errorf("%s was written: --calls x,y, the id of the call writing notes.txt, approved calls x and y", f)
		}
	}
}

// TestConsoleRedteamNewCallDoesNotMoveTheApproveButton kept out a finding: the
// console lists the calls awaiting a decision newest first, and
// re-renders the list the moment one arrives, with its buttons live. A
// model that sends a harmful call of the same shape while the person
// moves to press "Approve batch A" slides a card of its own in above,
// and the press lands on "Approve batch B", exactly where A's was. At
// fault: render and renderAwaiting (console.js) put a new call first
// and enable its buttons at once. Fix: add new calls below those shown
// (oldest first) and keep a fresh card's buttons disabled for a moment
// (or until the pointer moves onto it), so no press can land on a card
// the person has not seen.
func TestConsoleRedteamNewCallDoesNotMoveTheApproveButton(t *testing.T) {
	s := crServe(t)
	ctx := crBrowser(t)
	crRun(t, ctx, chromedp.Navigate(s.link))
	crWaitJS(t, ctx, `document.getElementById("status").textContent.startsWith("live")`)
	a := s.batch(t, "shift", crWrite("w", "notes.txt", "harmless\n"))
	crWaitJS(t, ctx, `document.querySelectorAll("#awaiting > li").length === 1`)
	at := crRun(t, ctx, chromedp.Evaluate[[2]float64](fmt.Sprintf(`(() => {
		const b = [...document.querySelectorAll("#awaiting button")].find((e) => e.textContent === "Approve batch %s");
		const r = b.getBoundingClientRect();
		return [r.x + r.width / 2, r.y + r.height / 2];
	})()`, a)))
	// The model's call arrives as the person's pointer reaches the button.
	b := s.batch(t, "shift", crWrite("v", "PWNED.txt", "harmful!\n"))
	crWaitJS(t, ctx, `document.querySelectorAll("#awaiting > li").length === 2`)
	under := crRun(t, ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.elementFromPoint(%f, %f) || {}).textContent || ""`, at[0], at[1])))
	if under != "Approve batch "+a {
		t.Errorf("a new call moved the cards: where \"Approve batch %s\" was, the page now has %q (batch %s writes PWNED.txt)", a, under, b)
	}
}

// TestConsoleRedteamLongLinesDoNotSwellTheState kept out a finding: the console
// folds a call's arguments by lines (consoleArgumentLines) but not by
// bytes, so a command of one 250 KB line goes whole into every state
// answer, and the console fetches its state again on every change (four
// times a second while a command streams output). Forty such held calls
// make each state answer about 10 MB, taking the server more than a
// second of CPU to build and the page as long to parse and lay out, on
// every change: the approval surface crawls exactly when the model
// floods it. At fault: consoleView (console.go) lays out with
// engine.Layout{MaxLines} only. Fix: bound each value's bytes as well as
// its lines in the state answer ("Show all" fetches the rest), and
// bound the answer as a whole.
func TestConsoleRedteamLongLinesDoNotSwellTheState(t *testing.T) {
	s := crServe(t)
	const calls, line = 40, 250_000
	for i := range calls {
		s.batch(t, "long", map[string]any{"id": fmt.Sprintf("c%d", i), "name": "run_command",
			"arguments": map[string]any{"command": "echo " + strings.Repeat("A", line)}})
	}
	c := s.session(t)
	start := time.Now()
	req, _ := http.NewRequest("GET", s.base+"/console/api/state", nil)
	req.Header.Set("X-Toolhost-Console-Key", c.key)
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	t.Logf("GET /console/api/state with %d held calls of one %d-byte line: %d bytes in %v", calls, line, n, took)
	if n > 2<<20 {
		t.Errorf("the console's state answer is %d bytes for %d held calls: long single-line arguments are not folded", n, calls)
	}
}

// TestConsoleRedteamSessionRunsNoTools kept out a finding: a console session
// may reach every /v1 endpoint, POST /v1/batches among them, so whoever
// holds the session (a stolen cookie, see above, or script in the page)
// plans a run_command of its own, approves it with the same session and
// runs any command, though sessionAllowed (consoleauth.go) keeps the
// session off /mcp because "a browser never runs tools". The console
// itself needs only its own /console/api, the decision, results and
// events of existing batches. At fault: sessionAllowed admits every
// /v1/ path. Fix: admit the session to exactly the endpoints the console
// uses (GET /v1/batches..., POST /v1/batches/ID/decision, /cancel,
// /results), not POST /v1/batches nor /v1/journal/undo or /recover.
func TestConsoleRedteamSessionRunsNoTools(t *testing.T) {
	s := crServe(t)
	c := s.session(t)
	h := c.header()
	var b struct {
		BatchID string `json:"batch_id"`
		State   string `json:"state"`
	}
	code := crDo(t, c.hc, "POST", s.base+"/v1/batches", map[string]any{"conversation_id": "browser", "calls": []map[string]any{
		{"id": "x", "name": "run_command", "arguments": map[string]any{"command": "touch PWNED"}}}}, &b, h)
	if code != http.StatusCreated {
		return // refused
	}
	t.Errorf("a console session planned a batch of its own: POST /v1/batches answered %d", code)
	if b.State == "awaiting_approval" {
		crDo(t, c.hc, "POST", s.base+"/v1/batches/"+b.BatchID+"/decision", map[string]any{"decision": "approve_all"}, nil, h)
	}
	s.waitDone(t, b.BatchID)
	if _, err := os.Stat(filepath.Join(s.root, "PWNED")); err == nil {
		t.Errorf("the console session ran a command of its own choosing: PWNED exists")
	}
}

// TestConsoleRedteamByCannotNameAnotherDecider kept out a finding (low
// severity): a batch API client's "by" is checked to be a plain
// program's name, but "a person in the web console", the very words the
// server uses for the console, is one: the batch then reads "decided by
// a person in the web console (through the batch API)" in the console,
// in GET /v1/batches/ID and in the model's denial ("Denied by a person
// in the web console ..."), passing a script's decision off as a
// person's. At fault: validBy (batchapi.go) accepts any words. Fix:
// refuse a by naming a decider the server itself names (the console,
// the MCP client, --allow, nobody), or quote it as a program
// ("the program \"X\" through the batch API").
func TestConsoleRedteamByCannotNameAnotherDecider(t *testing.T) {
	s := crServe(t)
	for _, by := range []string{"a person in the web console", "the MCP client which answered accept to the approval question"} {
		id := s.batch(t, "by", crWrite("w", "notes.txt", "x\n"))
		var v struct {
			DecidedBy string `json:"decided_by"`
		}
		code := s.api(t, "POST", "/v1/batches/"+id+"/decision", map[string]any{"decision": "deny_all", "by": by}, &v)
		if code == http.StatusOK && strings.HasPrefix(v.DecidedBy, by) {
			t.Errorf("by %q was taken: the batch reads decided by %q", by, v.DecidedBy)
		}
	}
}

// TestConsoleRedteamOtherPortCannotLogTheConsoleOut kept out a finding (low
// severity, denial of service): a page on another local port may set
// cookies for 127.0.0.1 (cookies ignore ports), so it sets
// toolhost_console_PORT=bogus with Path=/v1. The browser then sends the
// bogus cookie first on every /v1 request of the console, the server
// reads only the first cookie of the name, and every decision the
// person makes is refused as "session expired" (the page reloads and
// the call waits until its hold times out) while the console still
// looks logged in. At fault: checkConsole (consoleauth.go) takes
// r.Cookie, the first cookie of the name. Fix: try every cookie of the
// name (r.CookiesNamed) and take the one that is a live session.
func TestConsoleRedteamOtherPortCannotLogTheConsoleOut(t *testing.T) {
	s := crServe(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>dev server</title><script>document.cookie = "toolhost_console_%s=bogus; path=/v1"</script><p id=done>hello`, s.port)
	})}
	go other.Serve(ln)
	t.Cleanup(func() { other.Close() })

	ctx := crBrowser(t)
	crRun(t, ctx, chromedp.Navigate("http://"+ln.Addr().String()+"/"))
	crWaitJS(t, ctx, `document.getElementById("done") !== null`)
	crRun(t, ctx, chromedp.Navigate(s.link))
	crWaitJS(t, ctx, `document.getElementById("status").textContent.startsWith("live")`)
	id := s.batch(t, "tossed", crWrite("w", "notes.txt", "harmless\n"))
	crWaitJS(t, ctx, `document.querySelectorAll("#awaiting > li").length === 1`)
	// The console enables a new call's buttons a moment after showing it.
	crWaitJS(t, ctx, fmt.Sprintf(`[...document.querySelectorAll("#awaiting button")].some((e) => e.textContent === "Approve batch %s" && !e.disabled)`, id))
	crRun(t, ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => {
		[...document.querySelectorAll("#awaiting button")].find((e) => e.textContent === "Approve batch %s").click();
		return true;
	})()`, id)))
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		var b struct {
			State string `json:"state"`
		}
		s.api(t, "GET", "/v1/batches/"+id, nil, &b)
		if b.State != "awaiting_approval" {
			return
		}
	}
	t.Errorf("the person pressed \"Approve batch %s\" and it still awaits a decision: a cookie set by another local port shadows the session on /v1", id)
}

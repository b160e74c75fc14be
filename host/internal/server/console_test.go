package server

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// consoleClient is a browser's view of the console: no bearer token, the
// session cookie it got by logging in, and the key the login's redirect
// handed the page.
type consoleClient struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
	key    string
}

// newLink is a fresh login link, once the server serves HTTP.
func newLink(t *testing.T, a *apiTest) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if link := a.s.ConsoleLink(); link != "" {
			return link
		}
	}
	t.Fatal("no console link 10 s after the server started")
	return ""
}

// login spends a fresh login code as a browser does.
func login(t *testing.T, a *apiTest) *consoleClient {
	t.Helper()
	link := newLink(t, a)
	resp, err := noRedirect().Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	key, ok := strings.CutPrefix(resp.Header.Get("Location"), consolePath+"#key=")
	if resp.StatusCode != http.StatusSeeOther || !ok || len(key) < 32 {
		t.Fatalf("GET %s: %s to %q; want 303 to %s#key=KEY", link, resp.Status, resp.Header.Get("Location"), consolePath)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "toolhost_console_") {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" {
		t.Fatalf("login cookie %+v; want an HttpOnly, SameSite=Strict cookie for /", cookie)
	}
	c := &consoleClient{t: t, base: a.base, cookie: cookie, key: key}
	if status, out := c.do("GET", "/console/api/state", "", nil); status != 200 {
		t.Fatalf("GET /console/api/state: %d %s", status, out)
	}
	return c
}

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// do sends a request with the session cookie and the headers given as
// name, value pairs.
func (c *consoleClient) do(method, path, body string, header map[string]string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	if c.key != "" {
		req.Header.Set(consoleKeyHeader, c.key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := noRedirect().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestConsoleAuth: what reaches the console and the API without the
// bearer token, and what a session may do.
func TestConsoleAuth(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	if err := os.WriteFile(filepath.Join(a.root, "f.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.readFirst("f.txt")
	held := a.batch("POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w1", "name": "write_file", "arguments": map[string]any{"path": "f.txt", "content": "new\n"}}}}, 201)
	c := login(t, a)
	origin := a.base
	decision := `{"decision":"deny_all","reason":"not now"}`
	decide := batchPath(held.BatchID, "decision")
	anon := &consoleClient{t: t, base: a.base}
	stale := &consoleClient{t: t, base: a.base, cookie: &http.Cookie{Name: c.cookie.Name, Value: "NOTASESSION"}, key: c.key}
	// A server on another local port gets the cookie (cookies ignore
	// ports), never the key.
	cookieOnly := &consoleClient{t: t, base: a.base, cookie: c.cookie}
	wrongKey := &consoleClient{t: t, base: a.base, cookie: c.cookie, key: c.key + "x"}
	post := map[string]string{"Origin": origin, "Sec-Fetch-Site": "same-origin"}
	for _, tt := range []struct {
		name   string
		c      *consoleClient
		method string
		path   string
		body   string
		header map[string]string
		want   int
		msg    string
	}{
		{"no cookie: state", anon, "GET", "/console/api/state", "", nil, 401, "bearer token"},
		{"no cookie: batches", anon, "GET", "/v1/batches", "", nil, 401, "bearer token"},
		{"no cookie: page", anon, "GET", "/console", "", nil, 401, "--console-link"},
		{"no cookie: events", anon, "GET", "/console/api/events", "", nil, 401, ""},
		{"unknown session", stale, "GET", "/console/api/state", "", nil, 401, "session has expired"},
		{"cookie alone: page", cookieOnly, "GET", "/console", "", nil, 200, "console.js"},
		{"cookie alone: state", cookieOnly, "GET", "/console/api/state", "", nil, 401, "session's key"},
		{"cookie alone: decides nothing", cookieOnly, "POST", decide, decision, post, 401, "session's key"},
		{"wrong key", wrongKey, "GET", "/console/api/state", "", nil, 401, "session's key"},
		{"session: state", c, "GET", "/console/api/state", "", nil, 200, held.BatchID},
		{"session: no batch list", c, "GET", "/v1/batches", "", nil, 401, "bearer token"},
		{"session: no raw arguments", c, "GET", "/v1/batches/" + held.BatchID + "/calls/1/arguments", "", nil, 401, "bearer token"},
		{"session: not MCP", c, "POST", "/mcp", `{}`, nil, 401, "bearer token"},
		{"session: no links", c, "POST", consoleLinksPath, "", nil, 401, "bearer token"},
		{"session: plans no batch", c, "POST", "/v1/batches", `{"calls":[{"id":"x","name":"run_command","arguments":{"command":"true"}}]}`, post, 401, "bearer token"},
		{"session: no recovery", c, "POST", "/v1/journal/batches/" + held.BatchID + "/recover", `{"choice":"discard"}`, post, 401, "bearer token"},
		{"session: foreign origin", c, "POST", decide, decision, map[string]string{"Origin": "http://evil.example"}, 403, "Origin"},
		{"session: another port on localhost", c, "POST", decide, decision, map[string]string{"Origin": "http://127.0.0.1:1"}, 401, "own page"},
		{"session: cross-site fetch", c, "POST", decide, decision, map[string]string{"Sec-Fetch-Site": "cross-site"}, 401, "Sec-Fetch-Site"},
		{"session: same-site fetch", c, "GET", "/console/api/state", "", map[string]string{"Sec-Fetch-Site": "same-site"}, 401, "Sec-Fetch-Site"},
		{"session: decides", c, "POST", decide, decision, post, 200, "a person in the web console"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, out := tt.c.do(tt.method, tt.path, tt.body, tt.header)
			if status != tt.want || !strings.Contains(string(out), tt.msg) {
				t.Errorf("%s %s: %d %.300s; want %d with %q", tt.method, tt.path, status, out, tt.want, tt.msg)
			}
		})
	}
	done := a.wait(held.BatchID, stateDone)
	if len(done.Results) != 1 || done.Results[0].OK || !strings.Contains(done.Results[0].Error.Message, "The reason given: not now") {
		t.Errorf("the console's denial: %+v", done.Results)
	}
}

// TestConsoleLoginCode: a login code works once, and not after it
// expires; serve's link and a fresh one from /v1/console/links both work.
func TestConsoleLoginCode(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	link := newLink(t, a)
	get := func(link string) int {
		resp, err := noRedirect().Get(link)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(link); got != http.StatusSeeOther {
		t.Fatalf("first use: %d", got)
	}
	if got := get(link); got != http.StatusUnauthorized {
		t.Errorf("second use: %d; want 401", got)
	}
	u, _ := url.Parse(link)
	if got := get(a.base + "/console/login?code="); got != http.StatusUnauthorized {
		t.Errorf("empty code: %d; want 401", got)
	}
	if got := get(a.base + "/console/login?code=" + strings.ToLower(u.Query().Get("code"))); got != http.StatusUnauthorized {
		t.Errorf("a used code in other case: %d; want 401", got)
	}

	expiring := newLink(t, a)
	a.s.console.mu.Lock()
	a.s.console.now = func() time.Time { return time.Now().Add(loginCodeTTL + time.Second) }
	a.s.console.mu.Unlock()
	if got := get(expiring); got != http.StatusUnauthorized {
		t.Errorf("a code past its %v: %d; want 401", loginCodeTTL, got)
	}
	a.s.console.mu.Lock()
	a.s.console.now = time.Now
	a.s.console.mu.Unlock()

	status, out := a.do("POST", consoleLinksPath, nil)
	var fresh consoleLink
	if err := json.Unmarshal(out, &fresh); status != http.StatusCreated || err != nil || !strings.HasPrefix(fresh.URL, a.base+"/console/login?code=") {
		t.Fatalf("POST %s: %d %s", consoleLinksPath, status, out)
	}
	if got := get(fresh.URL); got != http.StatusSeeOther {
		t.Errorf("a link from %s: %d", consoleLinksPath, got)
	}
}

// TestConsoleHeaders: every console answer forbids inline script and
// framing, and the page loads no script it does not serve itself.
func TestConsoleHeaders(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	c := login(t, a)
	for _, path := range []string{"/console", "/console/static/console.js", "/console/static/console.css", "/console/api/state", "/console/login?code=x"} {
		req, _ := http.NewRequest("GET", a.base+path, nil)
		req.AddCookie(c.cookie)
		req.Header.Set(consoleKeyHeader, c.key)
		resp, err := noRedirect().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: headers %v", path, resp.Header)
		}
		if strings.HasSuffix(path, ".js") && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("GET %s: Content-Type %q", path, resp.Header.Get("Content-Type"))
		}
		if path == "/console" {
			for _, tag := range regexp.MustCompile(`<script[^>]*>`).FindAllString(string(body), -1) {
				if !strings.Contains(tag, `src="/console/static/`) {
					t.Errorf("the page has a script that is not its own file: %s", tag)
				}
			}
			if regexp.MustCompile(`(?i)\son[a-z]+=|https?://|style=`).MatchString(string(body)) {
				t.Errorf("the page has an inline handler, style or a link elsewhere:\n%s", body)
			}
		}
	}
	if status, _ := c.do("GET", "/console/static/index.html", "", nil); status != http.StatusNotFound {
		t.Errorf("the page through /static: %d; want 404", status)
	}
}

// TestConsoleEvents: the console's stream says "changed" when a batch
// changes, including one changed while the console read its state.
func TestConsoleEvents(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	c := login(t, a)
	req, _ := http.NewRequest("GET", a.base+"/console/api/events", nil)
	req.AddCookie(c.cookie)
	req.Header.Set(consoleKeyHeader, c.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := make(chan string, 16)
	go func() {
		defer close(evs)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				evs <- name
			}
		}
	}()
	next := func(what string) {
		t.Helper()
		select {
		case ev := <-evs:
			if ev != "changed" {
				t.Fatalf("%s: event %q; want changed", what, ev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no event within 10 s", what)
		}
	}
	next("on connecting")
	a.readFirst("a.txt")
	next("after a batch")
	// Two changes in quick succession are at least one event, never none.
	a.readFirst("b.txt")
	a.readFirst("c.txt")
	next("after two more batches")
}

// TestConsoleStreamLimit: the console's event streams are bounded; one
// past the bound is refused, and a closed one makes room.
func TestConsoleStreamLimit(t *testing.T) {
	a := serveAPI(t, Options{}, nil)
	c := login(t, a)
	open := func() *http.Response {
		req, _ := http.NewRequest("GET", a.base+"/console/api/events", nil)
		req.AddCookie(c.cookie)
		req.Header.Set(consoleKeyHeader, c.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var streams []*http.Response
	for range maxConsoleStreams {
		resp := open()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %s", len(streams)+1, resp.Status)
		}
		streams = append(streams, resp)
	}
	if resp := open(); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a stream past %d: %s; want 429", maxConsoleStreams, resp.Status)
		resp.Body.Close()
	}
	streams[0].Body.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp := open()
		if resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("closing a stream made no room within 10 s")
		}
	}
	for _, r := range streams[1:] {
		r.Body.Close()
	}
}

// TestSessionAllowed: a console session reaches what the console does
// and nothing else, however the path is spelled.
func TestSessionAllowed(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/console", true},
		{"GET", "/console/api/state", true},
		{"POST", "/console/logout", true},
		{"POST", "/console/api/state", false},
		{"GET", "/v1/batches/b1/events", true},
		{"POST", "/v1/batches/b1/decision", true},
		{"POST", "/v1/batches/b1/results", true},
		{"POST", "/v1/batches/b1/cancel", false},
		{"POST", "/v1/batches", false},
		{"GET", "/v1/batches", false},
		{"GET", "/v1/batches/b1", false},
		{"GET", "/v1/batches/b1/calls/1/arguments", false},
		{"GET", "/v1/batches/b1/events/x", false},
		{"GET", "/v1/journal/batches", true},
		{"GET", "/v1/journal/batches/b1", true},
		{"POST", "/v1/journal/batches/b1/recover", false},
		{"POST", "/v1/journal/undo", true},
		{"GET", "/v1/journal", false},
		{"POST", consoleLinksPath, false},
		{"POST", "/mcp", false},
		{"GET", "/mcp/p", false},
		{"GET", "/v1//batches/b1/events", false},
		{"GET", "/", false},
		{"GET", "/v1", false},
	} {
		if got := sessionAllowed(tt.method, tt.path); got != tt.want {
			t.Errorf("sessionAllowed(%s %s) = %v, want %v", tt.method, tt.path, got, tt.want)
		}
	}
}

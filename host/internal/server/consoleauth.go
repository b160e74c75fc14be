package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The web console's logins. A browser never holds the bearer token: the
// operator opens a link with a one-time code (serve prints one, and
// toolhost serve --console-link asks the running server for another),
// which opens a session. The session is two secrets: an HttpOnly,
// SameSite=Strict cookie, and a key the login hands the page in the
// redirect's fragment, which the page keeps in its origin's storage and
// sends in a header with every request. A cookie is sent to every port
// of the host, so a server on another local port the browser visits
// gets it; the key it never sees, and without the key the cookie opens
// nothing but the console's static page. The header is also what no
// cross-site form can send. A session reaches only what the console
// uses: never /mcp, nor the planning of a batch of its own.

const (
	// loginCodeTTL is how long a login link works: long enough to copy
	// it from a terminal into a browser.
	loginCodeTTL = 10 * time.Minute
	// consoleSessionTTL is how long a console session lasts after its
	// last request: a working day's idle tab stays logged in.
	consoleSessionTTL = 12 * time.Hour
	// maxLoginCodes and maxConsoleSessions bound what an operator (or a
	// script with the token) can make pile up; the oldest goes first.
	maxLoginCodes      = 16
	maxConsoleSessions = 32
	// consoleKeyHeader carries a session's key.
	consoleKeyHeader = "X-Toolhost-Console-Key"
)

// consoleAuth holds the console's unused login codes and its sessions,
// each by the SHA-256 of its secret, so a memory dump holds no
// credential.
type consoleAuth struct {
	mu       sync.Mutex
	codes    map[[sha256.Size]byte]time.Time // expiry
	sessions map[[sha256.Size]byte]*consoleSession
	now      func() time.Time
	// streams counts the console event streams open.
	streams int
	// refusals counts the logins refused since lastWarn.
	refusals int
	lastWarn time.Time
}

// refused counts a refused login, and says whether to log the refusals
// counted (at most every interval) and how many they are.
func (a *consoleAuth) refused(interval time.Duration) (n int, log bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refusals++
	if now := a.now(); now.Sub(a.lastWarn) >= interval {
		n, a.refusals, a.lastWarn = a.refusals, 0, now
		return n, true
	}
	return 0, false
}

// openStream takes a place for a console event stream, if one is left.
func (a *consoleAuth) openStream() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.streams >= maxConsoleStreams {
		return false
	}
	a.streams++
	return true
}

func (a *consoleAuth) closeStream() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.streams--
}

// consoleSession is one browser's login.
type consoleSession struct {
	key     string
	created time.Time
	expires time.Time
}

func newConsoleAuth() *consoleAuth {
	return &consoleAuth{codes: map[[sha256.Size]byte]time.Time{}, sessions: map[[sha256.Size]byte]*consoleSession{}, now: time.Now}
}

// newCode makes a login code valid once, for loginCodeTTL.
func (a *consoleAuth) newCode() (code string, expires time.Time) {
	code = rand.Text()
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.sweepLocked(now)
	if len(a.codes) >= maxLoginCodes {
		dropOldest(a.codes, func(t time.Time) time.Time { return t })
	}
	expires = now.Add(loginCodeTTL)
	a.codes[sha256.Sum256([]byte(code))] = expires
	return code, expires
}

// errLogin is a login code that is unknown, used or expired.
var errLogin = errors.New("this console link was used already or has expired (a link works once, for 10 minutes): run toolhost serve --console-link --http ADDR for a fresh one")

// login spends code and opens a session; secret goes in the cookie,
// s.key to the page.
func (a *consoleAuth) login(code string) (secret string, s *consoleSession, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.sweepLocked(now)
	key := sha256.Sum256([]byte(code))
	if _, ok := a.codes[key]; !ok || code == "" {
		return "", nil, errLogin
	}
	delete(a.codes, key)
	if len(a.sessions) >= maxConsoleSessions {
		// The least recently used goes, not the operator's tab in use.
		dropOldest(a.sessions, func(s *consoleSession) time.Time { return s.expires })
	}
	secret = rand.Text() + rand.Text()
	s = &consoleSession{key: rand.Text() + rand.Text(), created: now, expires: now.Add(consoleSessionTTL)}
	a.sessions[sha256.Sum256([]byte(secret))] = s
	return secret, s, nil
}

// session is the live session whose secret is given; nil when there is
// none.
func (a *consoleAuth) session(secret string) *consoleSession {
	if secret == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked(a.now())
	return a.sessions[sha256.Sum256([]byte(secret))]
}

// used extends s by a request that passed every check: a replayed
// cookie without the key keeps no session alive.
func (a *consoleAuth) used(s *consoleSession) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s.expires = a.now().Add(consoleSessionTTL)
}

// logout ends session s.
func (a *consoleAuth) logout(s *consoleSession) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, v := range a.sessions {
		if v == s {
			delete(a.sessions, k)
		}
	}
}

func (a *consoleAuth) sweepLocked(now time.Time) {
	for k, t := range a.codes {
		if !now.Before(t) {
			delete(a.codes, k)
		}
	}
	for k, s := range a.sessions {
		if !now.Before(s.expires) {
			delete(a.sessions, k)
		}
	}
}

// dropOldest removes the entry of m whose time is earliest.
func dropOldest[V any](m map[[sha256.Size]byte]V, at func(V) time.Time) {
	var oldest [sha256.Size]byte
	var when time.Time
	first := true
	for k, v := range m {
		if t := at(v); first || t.Before(when) {
			oldest, when, first = k, t, false
		}
	}
	if !first {
		delete(m, oldest)
	}
}

// cookieName is the session cookie of the server on port: cookies do
// not tell ports apart, so two servers on one machine each need their
// own.
func cookieName(port string) string { return "toolhost_console_" + port }

// checkConsole says whether r is a request of a console session, and
// what is wrong with it if it cannot be served as one ("" if nothing):
// it must be one the console makes (sessionAllowed), come from this
// server's own origin (a page of another port on localhost is the same
// site, so SameSite alone does not keep it out), and, but for the
// console's page and files, carry the session's key. Every cookie of
// the name is tried: a page of another port may set one of its own,
// which the browser sends first.
func (a *consoleAuth) checkConsole(r *http.Request, port string) (s *consoleSession, msg string) {
	cookies := r.CookiesNamed(cookieName(port))
	if len(cookies) == 0 || a == nil || !sessionAllowed(r.Method, r.URL.Path) {
		return nil, ""
	}
	for _, c := range cookies {
		if s = a.session(c.Value); s != nil {
			break
		}
	}
	where := r.Method + " " + r.URL.Path
	if s == nil {
		return nil, where + ": the console session has expired or the server restarted: open a fresh console link (toolhost serve --console-link --http ADDR prints one)"
	}
	if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, "http://"+r.Host) {
		return nil, where + ": a console request must come from the console's own page, not from " + truncate(o, 80)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return nil, where + ": a console request must come from the console's own page (Sec-Fetch-Site: " + truncate(site, 20) + ")"
	}
	if publicPath(r) {
		return s, ""
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(consoleKeyHeader)), []byte(s.key)) != 1 {
		return nil, where + ": the request lacks the console session's key (header " + consoleKeyHeader + "): open the console with a fresh link (toolhost serve --console-link --http ADDR prints one)"
	}
	a.used(s)
	return s, ""
}

// sessionAllowed reports whether a console session may make the request
// method path: what the console does, and nothing more. It reads its
// state, the journal and batches' events; decides, submits the results
// of, and undoes what is there. It never reaches MCP, never
// plans a batch of its own (a session would otherwise run any command
// it approves itself), and never makes login links.
func sessionAllowed(method, path string) bool {
	p := strings.Split(strings.TrimPrefix(path, "/"), "/")
	get := method == http.MethodGet || method == http.MethodHead
	post := method == http.MethodPost
	switch {
	case p[0] == "console":
		return get || post && path == consolePath+"/logout"
	case len(p) < 2 || p[0] != "v1":
		return false
	case p[1] == "batches":
		// A batch's events (its output), its decision and its results;
		// never POST /v1/batches.
		return len(p) == 4 && (get && p[3] == "events" || post && (p[3] == "decision" || p[3] == "results"))
	case p[1] == "journal":
		return get && len(p) >= 3 && len(p) <= 4 && p[2] == "batches" || post && path == "/v1/journal/undo"
	}
	return false
}

// publicPath reports whether r is served without a credential: health,
// the console's login and its static files, and the console page itself,
// which without a session explains how to log in.
func publicPath(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	p := r.URL.Path
	return p == "/v1/health" || p == consolePath || p == consolePath+"/login" || strings.HasPrefix(p, consolePath+"/static/")
}

// authKey marks an authenticated request's context with how it was
// authenticated.
type authKey struct{}

// authBy is how a request was authenticated.
type authBy struct {
	bearer  bool
	console *consoleSession
}

func withAuth(ctx context.Context, a authBy) context.Context {
	return context.WithValue(ctx, authKey{}, a)
}

func authOf(ctx context.Context) (authBy, bool) {
	a, ok := ctx.Value(authKey{}).(authBy)
	return a, ok
}

// fromConsole reports whether ctx is a request of a console session.
func fromConsole(ctx context.Context) bool {
	a, _ := authOf(ctx)
	return a.console != nil
}

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
// which opens a session held in an HttpOnly, SameSite=Strict cookie.
// Requests of a session reach only the console and /v1, never /mcp;
// those that change anything also carry the session's anti-CSRF token
// in a header a cross-site form cannot set, and none may come from
// another origin.

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
	// csrfHeader carries a session's anti-CSRF token.
	csrfHeader = "X-Toolhost-CSRF"
)

// consoleAuth holds the console's unused login codes and its sessions,
// each by the SHA-256 of its secret, so a memory dump holds no
// credential.
type consoleAuth struct {
	mu       sync.Mutex
	codes    map[[sha256.Size]byte]time.Time // expiry
	sessions map[[sha256.Size]byte]*consoleSession
	now      func() time.Time
}

// consoleSession is one browser's login.
type consoleSession struct {
	csrf    string
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

// login spends code and opens a session; secret goes in the cookie.
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
		dropOldest(a.sessions, func(s *consoleSession) time.Time { return s.created })
	}
	secret = rand.Text() + rand.Text()
	s = &consoleSession{csrf: rand.Text() + rand.Text(), created: now, expires: now.Add(consoleSessionTTL)}
	a.sessions[sha256.Sum256([]byte(secret))] = s
	return secret, s, nil
}

// session is the live session whose secret is given, extended by its
// use; nil when there is none.
func (a *consoleAuth) session(secret string) *consoleSession {
	if secret == "" {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	a.sweepLocked(now)
	s := a.sessions[sha256.Sum256([]byte(secret))]
	if s != nil {
		s.expires = now.Add(consoleSessionTTL)
	}
	return s
}

// logout ends the session whose secret is given.
func (a *consoleAuth) logout(secret string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.sessions, sha256.Sum256([]byte(secret)))
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
// it must reach the console or /v1, come from this server's own origin
// (a page of another port on localhost is the same site, so SameSite
// alone does not keep it out), and, unless it only reads, carry the
// session's anti-CSRF token.
func (a *consoleAuth) checkConsole(r *http.Request, port string) (s *consoleSession, msg string) {
	c, err := r.Cookie(cookieName(port))
	if err != nil || a == nil {
		return nil, ""
	}
	if !sessionPath(r.URL.Path) {
		return nil, ""
	}
	s = a.session(c.Value)
	if s == nil {
		return nil, r.Method + " " + r.URL.Path + ": the console session has expired or the server restarted: open a fresh console link (toolhost serve --console-link --http ADDR prints one)"
	}
	if o := r.Header.Get("Origin"); o != "" && !strings.EqualFold(o, "http://"+r.Host) {
		return nil, r.Method + " " + r.URL.Path + ": a console request must come from the console's own page, not from " + truncate(o, 80)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return nil, r.Method + " " + r.URL.Path + ": a console request must come from the console's own page (Sec-Fetch-Site: " + truncate(site, 20) + ")"
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(csrfHeader)), []byte(s.csrf)) != 1 {
			return nil, r.Method + " " + r.URL.Path + ": the request lacks the console's anti-CSRF token (header " + csrfHeader + "): reload the console page"
		}
	}
	return s, ""
}

// sessionPath reports whether a console session may reach path: the
// console and the batch API, but not MCP (a browser never runs tools)
// nor the making of login links.
func sessionPath(path string) bool {
	switch {
	case path == consolePath || strings.HasPrefix(path, consolePath+"/"):
		return true
	case path == consoleLinksPath:
		return false
	}
	return strings.HasPrefix(path, "/v1/")
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

package server

import (
	"embed"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// The web console (FR-TUI-01..04) at /console: a person approves or
// denies what waits for a decision, watches calls run and their output
// stream, and submits parse-only results. It is static files built into
// the binary and the JSON under /console/api; it loads nothing from
// elsewhere, runs no inline script (its Content-Security-Policy forbids
// it), and puts everything a model or a plugin wrote into the page as
// text, never as markup.

const (
	consolePath      = "/console"
	consoleLinksPath = "/v1/console/links"
	// consoleBatches bounds the batches one state answer shows, newest
	// first: those awaiting a decision always show.
	consoleBatches = 300
	// consoleArgumentLines is how many lines of an argument's value the
	// console shows before "Show all".
	consoleArgumentLines = 40
	// consoleDiffLines and consoleDiffBytes bound the diff it shows.
	consoleDiffLines = 2000
	consoleDiffBytes = 64 << 10
	// consoleArgumentBytes bounds a call's arguments as laid out, and any
	// one line of its diff: a model's one-line flood must not make every
	// state answer megabytes ("Show all" fetches the arguments whole).
	consoleArgumentBytes = 8 << 10
	// consoleSummaryBytes bounds a call's summary.
	consoleSummaryBytes = 1 << 10
	// consoleResultBytes bounds the result text of a call in a state
	// answer; the batch API has it whole.
	consoleResultBytes = 8 << 10
	// consoleChangeEvery is the most often the console's event stream
	// says something changed: a command streaming output changes its
	// batch thousands of times a second.
	consoleChangeEvery = 250 * time.Millisecond
	// consoleWriteTimeout bounds each write to a console's event stream:
	// a page that stopped reading is dropped, not waited for.
	consoleWriteTimeout = 30 * time.Second
	// maxConsoleStreams bounds the console event streams open at once.
	maxConsoleStreams = 16
	// loginWarnEvery is the most often a refused login is logged: any
	// page can make a browser request login links.
	loginWarnEvery = 10 * time.Second
)

//go:embed console
var consoleFiles embed.FS

// consoleCSP lets the page load only its own script and style and talk
// only to this server: no inline script, no frames, no forms elsewhere.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// consoleHeaders are set on every console answer.
func consoleHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func (s *Server) handleConsole(mux *http.ServeMux) {
	mux.HandleFunc("GET "+consolePath, s.consolePage)
	mux.HandleFunc("GET "+consolePath+"/login", s.consoleLogin)
	mux.HandleFunc("POST "+consolePath+"/logout", s.consoleLogout)
	mux.HandleFunc("GET "+consolePath+"/static/{file}", s.consoleStatic)
	mux.HandleFunc("GET "+consolePath+"/api/state", s.consoleState)
	mux.HandleFunc("GET "+consolePath+"/api/events", s.consoleEvents)
	mux.HandleFunc("GET "+consolePath+"/api/batches/{id}/calls/{n}/arguments", s.consoleArguments)
}

// consolePage serves the console to a session, and to anyone else a
// page saying how to log in.
func (s *Server) consolePage(w http.ResponseWriter, r *http.Request) {
	consoleHeaders(w)
	if a, ok := authOf(r.Context()); !ok || a.console == nil && !a.bearer {
		loginPage(w, http.StatusUnauthorized, "Open the console with the link toolhost serve printed when it started, or print a fresh one with: toolhost serve --console-link --http ADDR (a link works once, for 10 minutes).")
		return
	}
	page, err := consoleFiles.ReadFile("console/index.html")
	if err != nil {
		http.Error(w, "the console's page is missing from this build", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page)
}

// loginPage is a page of one message, with no script.
func loginPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>toolhost console: log in</title><link rel="stylesheet" href="%s/static/console.css"></head><body><main class="login"><h1>toolhost console</h1><p>%s</p></main></body></html>`,
		consolePath, html.EscapeString(msg))
}

// consoleLogin spends a login code and opens a session.
func (s *Server) consoleLogin(w http.ResponseWriter, r *http.Request) {
	consoleHeaders(w)
	_, port, _ := net.SplitHostPort(r.Host)
	secret, session, err := s.console.login(r.URL.Query().Get("code"))
	if err != nil {
		if n, ok := s.console.refused(loginWarnEvery); ok {
			s.log.Warn("console: login links were refused (used, expired or made up)", "refused", n)
		}
		loginPage(w, http.StatusUnauthorized, err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName(port), Value: secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(consoleSessionTTL / time.Second)})
	s.log.Info("console: logged in", "remote", r.RemoteAddr)
	// The code leaves the address bar at once; the key goes to the page
	// in the fragment, which no request carries (consoleauth.go).
	http.Redirect(w, r, consolePath+"#key="+session.key, http.StatusSeeOther)
}

func (s *Server) consoleLogout(w http.ResponseWriter, r *http.Request) {
	consoleHeaders(w)
	a, _ := authOf(r.Context())
	if a.console == nil {
		writeError(w, http.StatusBadRequest, "InvalidRequest", "POST /console/logout: no console session to end")
		return
	}
	// The session the request was admitted with: another port may have
	// set a cookie of the name too (consoleauth.go).
	s.console.logout(a.console)
	_, port, _ := net.SplitHostPort(r.Host)
	http.SetCookie(w, &http.Cookie{Name: cookieName(port), Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

// consoleStatic serves the console's script and style.
func (s *Server) consoleStatic(w http.ResponseWriter, r *http.Request) {
	consoleHeaders(w)
	name := r.PathValue("file")
	data, err := consoleFiles.ReadFile("console/" + path.Base(name))
	if err != nil || name != path.Base(name) || name == "index.html" {
		http.NotFound(w, r)
		return
	}
	switch path.Ext(name) {
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Write(data)
}

// consoleState is what the console shows: the server's settings and its
// batches, newest first, with what a person deciding each call of those
// awaiting a decision is shown.
type consoleState struct {
	Version     string         `json:"version"`
	Approvals   Approvals      `json:"approvals"`
	HoldSeconds int64          `json:"hold_seconds"`
	Awaiting    int            `json:"awaiting"`
	Batches     []consoleBatch `json:"batches"`
	// Omitted counts the finished batches left out past consoleBatches.
	Omitted int `json:"omitted,omitempty"`
}

type consoleBatch struct {
	ID           string        `json:"id"`
	Conversation string        `json:"conversation"`
	State        string        `json:"state"`
	HeldForMCP   bool          `json:"held_for_mcp"`
	DecidedBy    string        `json:"decided_by,omitempty"`
	Created      time.Time     `json:"created"`
	Calls        []consoleCall `json:"calls"`
}

// consoleCall is one call as the console shows it. Every text field
// holding what a model or a plugin wrote is rendered visibly
// (engine.Visible and engine.Approval's layout), so an invisible or
// bidi character shows as it does at the terminal.
type consoleCall struct {
	N int `json:"n"`
	// ID is the call's id as shown (engine.ShownID); RawID is the id itself,
	// what a decision names.
	ID          string `json:"id"`
	RawID       string `json:"raw_id"`
	JournalID   string `json:"journal_id"`
	Tool        string `json:"tool"`
	Disposition string `json:"disposition"`
	Risk        string `json:"risk,omitempty"`
	Summary     string `json:"summary,omitempty"`
	Reason      string `json:"reason,omitempty"`
	AlwaysAsk   bool   `json:"always_ask,omitempty"`
	// Arguments is every argument as it will run, each value's first
	// and last lines when it is long; Folded says "Show all" has more.
	Arguments string   `json:"arguments,omitempty"`
	Folded    bool     `json:"folded,omitempty"`
	Diff      []string `json:"diff,omitempty"`
	DiffNote  string   `json:"diff_note,omitempty"`
	Recap     string   `json:"recap,omitempty"`
	// Status is pending, awaiting, running, ok, failed or denied.
	Status string `json:"status"`
	// Result is the start of the call's result text: its content, or
	// its error's kind and message.
	Result string `json:"result,omitempty"`
}

func (s *Server) consoleState(w http.ResponseWriter, r *http.Request) {
	consoleHeaders(w)
	st := consoleState{Version: s.opts.Version, Approvals: s.opts.Approvals, HoldSeconds: int64(max(s.opts.HoldTimeout, 0) / time.Second), Batches: []consoleBatch{}}
	bs := s.batches.list()
	slices.Reverse(bs)
	for _, b := range bs {
		// Past the bound only finished batches are left out: every
		// other one may still need the person (a decision, a result).
		if b.isFinished() && len(st.Batches) >= consoleBatches {
			st.Omitted++
			continue
		}
		cb := b.consoleView()
		if cb.State == stateAwaiting {
			st.Awaiting++
		}
		st.Batches = append(st.Batches, cb)
	}
	writeJSON(w, http.StatusOK, st)
}

// consoleView is b as the console shows it.
func (b *batch) consoleView() consoleBatch {
	b.mu.Lock()
	defer b.mu.Unlock()
	cb := consoleBatch{ID: b.id, Conversation: engine.Visible(b.conversation), State: b.state, HeldForMCP: b.mcp,
		DecidedBy: b.decidedBy, Created: b.created.UTC(), Calls: make([]consoleCall, len(b.calls))}
	results := map[string]*engine.Result{}
	for i := range b.results {
		results[b.results[i].ID] = &b.results[i]
	}
	for i, c := range b.calls {
		cc := consoleCall{N: i + 1, ID: engine.ShownID(c.ID), RawID: c.ID, JournalID: c.JournalID, Tool: engine.Visible(c.Name), Disposition: string(c.Disposition),
			Risk: string(c.RiskLevel), Summary: cut(engine.Visible(c.Summary), consoleSummaryBytes), Reason: engine.Visible(c.Reason), AlwaysAsk: c.AlwaysAsk}
		if a := c.Approval; a != nil {
			short := a.DetailsLayout(engine.Layout{MaxLines: consoleArgumentLines, More: "Show all"})
			cc.Arguments = cut(short, consoleArgumentBytes)
			cc.Folded = cc.Arguments != a.DetailsLayout(engine.Layout{})
			cc.Recap = a.Recap(0)
			if a.Omitted != "" {
				cc.Arguments = "(" + engine.Visible(a.Omitted) + ")\n" + cc.Arguments
			}
			cc.Diff, cc.DiffNote = consoleDiff(a.Diff)
		}
		r := c.Result
		if r == nil {
			r = results[c.ID]
		}
		cc.Status, cc.Result = callStatus(b.state, c, r)
		cb.Calls[i] = cc
	}
	return cb
}

// consoleDiff is a dry run's diff as lines for the console, and a note
// on what it leaves out.
func consoleDiff(d *engine.Diff) (lines []string, note string) {
	switch {
	case d == nil:
		return nil, ""
	case d.Unavailable != "":
		return nil, "diff unavailable: " + engine.Visible(d.Unavailable)
	}
	text := strings.TrimPrefix(d.Text, "dry run: nothing was written\n")
	lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	size := 0
	for i, line := range lines {
		if i == consoleDiffLines || size+len(line) > consoleDiffBytes {
			note = fmt.Sprintf("%d more lines of the diff are not shown (the arguments hold the whole change)", len(lines)-i)
			lines = lines[:i]
			break
		}
		if len(line) > consoleArgumentBytes {
			lines[i] = cut(line, consoleArgumentBytes)
		}
		size += len(lines[i])
	}
	if d.Truncated {
		note = strings.TrimPrefix(note+"; the diff is longer than a dry run's output may be: the arguments are the whole change", "; ")
	}
	return lines, note
}

// callStatus is a call's progress (FR-TUI-02) and the start of its
// result.
func callStatus(state string, c callView, r *engine.Result) (status, text string) {
	if r != nil {
		text = r.Content
		status = "ok"
		if !r.OK {
			status = "failed"
			if r.Error != nil {
				text = string(r.Error.Kind) + ": " + r.Error.Message
				if denied(r.Error) {
					status = "denied"
				}
			}
		}
		if c.Disposition == engine.PreResolved {
			status = "preresolved"
		}
		return status, cut(engine.Visible(text), consoleResultBytes)
	}
	switch state {
	case stateAwaiting:
		if c.Disposition == engine.RequiresConfirmation {
			return "awaiting", ""
		}
		return "pending", ""
	case statePending:
		if c.Disposition == engine.Pending {
			return "pending_result", ""
		}
		return "pending", ""
	case stateRunning:
		return "running", ""
	case stateCancelled:
		return "cancelled", ""
	}
	return "pending", ""
}

// consoleArguments serves a call's arguments laid out in full, for
// "Show all".
func (s *Server) consoleArguments(w http.ResponseWriter, r *http.Request) {
	consoleHeaders(w)
	b, ok := s.lookup(w, r)
	if !ok {
		return
	}
	n, err := strconv.Atoi(r.PathValue("n"))
	b.mu.Lock()
	var text string
	found := err == nil && n >= 1 && n <= len(b.calls) && b.calls[n-1].Approval != nil
	if found {
		text = b.calls[n-1].Approval.DetailsLayout(engine.Layout{})
	}
	b.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "UnknownCall", fmt.Sprintf("GET %s: batch %s has no call %q awaiting a decision", r.URL.Path, b.id, truncate(r.PathValue("n"), 20)))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, text)
}

// consoleEvents tells the console when to fetch its state again: an
// event "changed" at most every consoleChangeEvery while batches change,
// a comment every sseKeepalive otherwise.
func (s *Server) consoleEvents(w http.ResponseWriter, r *http.Request) {
	consoleHeaders(w)
	if !s.console.openStream() {
		writeError(w, http.StatusTooManyRequests, "TooManyStreams", fmt.Sprintf("GET %s: %d console event streams are open, the most this server keeps: close a console tab", r.URL.Path, maxConsoleStreams))
		return
	}
	defer s.console.closeStream()
	rc := http.NewResponseController(w)
	send := func(text string) bool {
		rc.SetWriteDeadline(time.Now().Add(consoleWriteTimeout))
		_, err := io.WriteString(w, text)
		return err == nil && rc.Flush() == nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// Armed before each event is written, so a change made while the
	// console reads its state is never missed.
	changed := s.batches.changes.wait()
	if !send("event: changed\ndata: {}\n\n") {
		return
	}
	keep := time.NewTicker(sseKeepalive)
	defer keep.Stop()
	for {
		select {
		case <-changed:
			// Throttled: the changes of the next moment go in one event.
			select {
			case <-time.After(consoleChangeEvery):
			case <-r.Context().Done():
				return
			case <-s.stopping.Done():
				return
			}
			changed = s.batches.changes.wait()
			if !send("event: changed\ndata: {}\n\n") {
				return
			}
		case <-keep.C:
			if !send(": keepalive\n\n") {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.stopping.Done():
			return
		}
	}
}

// consoleLink is a login link for the console.
type consoleLink struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
}

// newConsoleLink makes a login link; only the bearer token's holder may.
func (s *Server) newConsoleLink(w http.ResponseWriter, r *http.Request) {
	if a, _ := authOf(r.Context()); !a.bearer {
		writeError(w, http.StatusForbidden, "Forbidden", "POST "+consoleLinksPath+": only a client with the bearer token may make console links")
		return
	}
	base := s.apiBase()
	if host := r.Host; host != "" {
		base = "http://" + host
	}
	writeJSON(w, http.StatusCreated, s.consoleLink(base))
}

func (s *Server) consoleLink(base string) consoleLink {
	code, exp := s.console.newCode()
	return consoleLink{URL: base + consolePath + "/login?code=" + code, ExpiresAt: exp.UTC()}
}

// ConsoleLink is a link that logs a browser into the console once, for
// ten minutes, while the server serves HTTP; "" otherwise.
func (s *Server) ConsoleLink() string {
	base := s.apiBase()
	if base == "" {
		return ""
	}
	return s.consoleLink(base).URL
}

// cut is s up to max bytes, on a rune boundary, with a note of what was
// left out.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	head := strings.ToValidUTF8(s[:max], "")
	return head + fmt.Sprintf(" … (%d more bytes not shown)", len(s)-len(head))
}

// denied reports whether e is a call's denial: by whoever was asked, or
// by default when nobody answered (engine's notApproved).
func denied(e *engine.ToolError) bool {
	if e.Kind == abi.KindDeniedByUser {
		return true
	}
	var d struct {
		Reason string `json:"reason"`
	}
	return e.Kind == abi.KindSandboxViolation && json.Unmarshal(e.Details, &d) == nil && d.Reason == string(abi.DenialNotAsked)
}

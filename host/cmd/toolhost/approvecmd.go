package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// `toolhost approve`: a person at a second terminal decides the calls a
// running `toolhost serve --http` holds, through its batch API, as a
// client of it: the server keeps the batches, this command only asks
// and answers.

const (
	// urlEnv names the server approve talks to when --url is not given.
	urlEnv = "TOOLHOST_URL"
	// defaultServeURL is where `toolhost serve --http` usually listens.
	defaultServeURL = "http://127.0.0.1:8765"
	// approveBy is who the results say decided.
	approveBy = "toolhost approve"
	// stateAwaitingApproval is the state of a batch waiting for a decision.
	stateAwaitingApproval = "awaiting_approval"
	// watchInterval is how often --watch asks for new held calls: the API
	// streams the events of a batch, but has no stream announcing new
	// batches, so the list is polled; 500 ms is quicker than a person
	// turns to the terminal, and an empty list is a few bytes.
	watchInterval = 500 * time.Millisecond
	// requestTimeout bounds one request: the API answers at once, so a
	// server that does not is stuck, and saying so beats hanging.
	requestTimeout = 30 * time.Second
)

type approveFlags struct {
	url         string
	calls       []string
	deny        bool
	reason      string
	all         bool
	interactive bool
	watch       bool
}

func newApproveCommand(g *globals) *cobra.Command {
	f := &approveFlags{}
	cmd := &cobra.Command{
		Use:   "approve [BATCH [--calls ID]... [--deny [--reason TEXT]] | --all | -i [--watch]]",
		Short: "Decide the tool calls a running toolhost serve --http holds for a decision",
		Long: `Decide, from a second terminal, the tool calls a running "toolhost serve --http ADDR"
holds for a person's decision, through its batch API (/v1).

With no argument, list every call awaiting a decision: its batch, its id, the tool, the risk
and the summary.
  toolhost approve BATCH                 approve every call of the batch
  toolhost approve BATCH --calls ID      approve that call (repeat for more); the batch's others are denied
  toolhost approve BATCH --deny          deny every call (--reason TEXT says why, to the model)
  toolhost approve --all [--deny]        decide every batch awaiting a decision
  toolhost approve -i                    ask about each call at this terminal, as toolhost call
                                         asks: y approves, v shows every argument in full,
                                         anything else denies
  toolhost approve -i --watch            then wait for the next held call, ring the bell and
                                         ask, until Ctrl-C

The server is --url (default: $TOOLHOST_URL, else http://127.0.0.1:8765; the MCP address
toolhost serve prints is taken too). The bearer token is $TOOLHOST_TOKEN, else server.token
in the configuration. The results name "toolhost approve" as who decided. A batch someone
else decided first is left as they decided it.
Exit status: 0 when every decision was taken (or the list shown), 1 when the server could
not be reached or refused one, 2 for usage errors.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			err := runApprove(cmd, g, f, args)
			var ee *exitError
			if err != nil && !errors.As(err, &ee) {
				err = &exitError{code: exitToolError, err: err}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.url, "url", "", "the server's address (default: $"+urlEnv+", else "+defaultServeURL+")")
	// One whole id a flag: a call id may hold a comma, and splitting it
	// would approve other calls than the one named.
	fl.StringArrayVar(&f.calls, "calls", nil, "approve only this call of BATCH, by its id as listed (repeat --calls for more); its other calls are denied")
	fl.BoolVar(&f.deny, "deny", false, "deny instead of approving")
	fl.StringVar(&f.reason, "reason", "", "why the calls are denied, given to the model in their results")
	fl.BoolVar(&f.all, "all", false, "decide every batch awaiting a decision")
	fl.BoolVarP(&f.interactive, "interactive", "i", false, "ask about each call awaiting a decision at this terminal")
	fl.BoolVar(&f.watch, "watch", false, "with -i: once nothing awaits a decision, wait for the next held call, ring the bell and ask, until Ctrl-C")
	return cmd
}

// checkApprove refuses flags and arguments that do not go together.
func checkApprove(f *approveFlags, args []string) error {
	switch {
	case len(args) > 1:
		return usageErrorf("approve takes at most one batch id, got %d; --all decides every batch awaiting a decision", len(args))
	case f.watch && !f.interactive:
		return usageErrorf("--watch goes with -i: toolhost approve -i --watch asks about each held call as it comes")
	case f.interactive && (len(args) > 0 || f.all || f.deny || len(f.calls) > 0):
		return usageErrorf("-i asks about every call awaiting a decision; give it without a batch, --all, --deny or --calls")
	case f.all && len(args) > 0:
		return usageErrorf("give a batch id or --all, not both")
	case len(f.calls) > 0 && len(args) == 0:
		return usageErrorf("--calls names calls of one batch: toolhost approve BATCH --calls ID [--calls ID]")
	case len(f.calls) > 0 && f.deny:
		return usageErrorf("--calls approves those calls and denies the others; --deny denies every call; give one of them")
	case f.deny && len(args) == 0 && !f.all:
		return usageErrorf("--deny needs a batch id, or --all to deny every batch awaiting a decision")
	case f.reason != "" && !f.deny && len(f.calls) == 0 && !f.interactive:
		return usageErrorf("--reason says why calls are denied: give it with --deny, with --calls (for the calls left out) or with -i")
	}
	for _, id := range f.calls {
		if id == "" {
			return usageErrorf("--calls \"\" names no call: give one call id a --calls, such as --calls call_1 --calls call_2")
		}
	}
	return nil
}

func runApprove(cmd *cobra.Command, g *globals, f *approveFlags, args []string) error {
	if err := checkApprove(f, args); err != nil {
		return err
	}
	in, _ := cmd.InOrStdin().(*os.File)
	if f.interactive && !isTerminal(in) {
		return usageErrorf("-i asks at a terminal, and standard input is not one: decide with toolhost approve BATCH (toolhost approve lists them)")
	}
	base, err := serverURL(f.url)
	if err != nil {
		return err
	}
	token, from, err := approveToken(g)
	if err != nil {
		return err
	}
	c := &apiClient{base: base, token: token, from: from, hc: &http.Client{Timeout: requestTimeout}}
	ctx, out, errw := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	switch {
	case f.interactive:
		return (&session{c: c, f: f, in: newTermInput(ctx, in), out: errw}).run(ctx)
	case f.all:
		return decideAll(ctx, c, f, out)
	case len(args) == 1:
		return decideOne(ctx, c, f, args[0], out)
	}
	return listHeld(ctx, c, out)
}

// serverURL is the batch API's base URL: --url, else $TOOLHOST_URL,
// else the usual address.
func serverURL(flag string) (string, error) {
	raw := flag
	if raw == "" {
		raw = os.Getenv(urlEnv)
	}
	if raw == "" {
		raw = defaultServeURL
	}
	shown := raw
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usageErrorf("--url %q is not a server's address: want one such as %s", shown, defaultServeURL)
	}
	// toolhost serve prints its MCP address; the API is beside it.
	if u.Path == "/mcp" || strings.HasPrefix(u.Path, "/mcp/") {
		u.Path = ""
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String(), nil
}

// approveToken is the bearer token: $TOOLHOST_TOKEN, else server.token
// in the configuration; from says which, for a refusal's message, which
// must never show the token itself.
func approveToken(g *globals) (token, from string, err error) {
	if t := os.Getenv(tokenEnv); t != "" {
		return t, "$" + tokenEnv, nil
	}
	l, err := g.settings()
	if err != nil {
		return "", "", err
	}
	if t := l.Config.Server.Token; t != "" {
		return t, "server.token in the configuration", nil
	}
	return "", "", usageErrorf("no bearer token for the server: set $%s to the token toolhost serve printed at start, or fix one with server.token in the configuration", tokenEnv)
}

// heldBatch is a batch as the API shows it: the fields approve reads.
type heldBatch struct {
	BatchID    string     `json:"batch_id"`
	State      string     `json:"state"`
	HeldForMCP bool       `json:"held_for_mcp"`
	DecidedBy  string     `json:"decided_by"`
	Calls      []heldCall `json:"calls"`
}

type heldCall struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	Disposition engine.Disposition `json:"disposition"`
	Summary     string             `json:"summary"`
	RiskLevel   abi.RiskLevel      `json:"risk_level"`
	Reason      string             `json:"reason"`
	Approval    *engine.Approval   `json:"approval"`
}

// awaiting are the calls of b that need a decision.
func (b heldBatch) awaiting() []heldCall {
	var cs []heldCall
	for _, c := range b.Calls {
		if c.Disposition == engine.RequiresConfirmation {
			cs = append(cs, c)
		}
	}
	return cs
}

// view is what a person deciding c is shown: the server's approval
// view, or, should it lack one, what the call's row says.
func (c heldCall) view() engine.Approval {
	if c.Approval != nil {
		return *c.Approval
	}
	conf := engine.Confirmation{CallID: c.ID, Tool: c.Name, Summary: c.Summary, Risk: c.RiskLevel, Reason: c.Reason}
	return engine.Approval{Confirmation: conf, SummaryNote: conf.SummaryNote()}
}

// decisionBody is the body of POST /v1/batches/{id}/decision.
type decisionBody struct {
	Decision string   `json:"decision"`
	IDs      []string `json:"ids,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	By       string   `json:"by"`
}

// apiClient speaks to the batch API of one server.
type apiClient struct {
	base  string
	token string
	from  string // where the token came from: "$TOOLHOST_TOKEN" or the configuration
	hc    *http.Client
}

// apiError is an answer of the server refusing a request.
type apiError struct {
	status        int
	kind, message string
}

func (e *apiError) Error() string { return e.message }

// decidedError says a batch no longer awaits a decision: someone else
// decided it, or it was cancelled or timed out, before this command.
type decidedError struct {
	id, state, by string
}

func (e *decidedError) Error() string {
	if e.by != "" {
		return fmt.Sprintf("batch %s was already decided, by %s (it is %s now): nothing was changed", vis(e.id), vis(e.by), e.state)
	}
	return fmt.Sprintf("batch %s no longer awaits a decision (it is %s): someone else decided first, or it was cancelled; nothing was changed", vis(e.id), e.state)
}

// do sends a request with body (JSON, when not nil) and decodes a
// successful answer into out.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("cannot reach a toolhost server at %s: %w; start one with toolhost serve --http ADDR, or pass --url (default: $%s, else %s)", c.base, err, urlEnv, defaultServeURL)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s at %s: reading the answer: %w", method, path, c.base, err)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("the server at %s refused the bearer token from %s (401 Unauthorized): set $%s to the token toolhost serve printed at start, or to its server.token", c.base, c.from, tokenEnv)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Kind, Message string } `json:"error"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Error.Message == "" {
			return fmt.Errorf("%s %s at %s answered %s, not toolhost's batch API: is --url a toolhost serve --http?", method, path, c.base, resp.Status)
		}
		return &apiError{status: resp.StatusCode, kind: e.Error.Kind, message: e.Error.Message}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s at %s: the answer is not the batch API's: %w", method, path, c.base, err)
	}
	return nil
}

// awaitingBatches are the batches awaiting a decision, oldest first.
func (c *apiClient) awaitingBatches(ctx context.Context) ([]heldBatch, error) {
	var list struct {
		Batches []heldBatch `json:"batches"`
	}
	if err := c.do(ctx, "GET", "/v1/batches?state="+stateAwaitingApproval, nil, &list); err != nil {
		return nil, err
	}
	return list.Batches, nil
}

// batch is batch id whole, with what a person deciding its calls is
// shown (a list may leave that out).
func (c *apiClient) batch(ctx context.Context, id string) (heldBatch, error) {
	var b heldBatch
	err := c.do(ctx, "GET", "/v1/batches/"+url.PathEscape(id), nil, &b)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusNotFound {
		return b, fmt.Errorf("no batch %s on the server at %s: it was never created there, or it ended and was forgotten; toolhost approve lists the batches awaiting a decision", vis(id), c.base)
	}
	return b, err
}

// decide sends d for batch id; a batch decided by someone else first is
// a *decidedError.
func (c *apiClient) decide(ctx context.Context, id string, d decisionBody) (heldBatch, error) {
	var b heldBatch
	err := c.do(ctx, "POST", "/v1/batches/"+url.PathEscape(id)+"/decision", d, &b)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusConflict {
		now, gerr := c.batch(ctx, id)
		if gerr != nil {
			return b, &decidedError{id: id, state: "no longer awaiting a decision"}
		}
		return b, &decidedError{id: id, state: now.State, by: now.DecidedBy}
	}
	return b, err
}

// listHeld prints one row per call awaiting a decision, then how to
// decide them.
func listHeld(ctx context.Context, c *apiClient, w io.Writer) error {
	list, err := c.awaitingBatches(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		_, err := fmt.Fprintf(w, "nothing awaits a decision at %s\n", c.base)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tCALL\tTOOL\tRISK\tSUMMARY")
	for _, b := range list {
		for _, call := range b.awaiting() {
			// Everything but the batch id is the model's to write.
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", vis(b.BatchID), engine.ShownID(call.ID), vis(call.Name), vis(string(call.RiskLevel)), vis(call.Summary))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "decide: toolhost approve %s approves its calls (--calls ID only that one, --deny [--reason TEXT] denies them); --all decides every batch; -i shows each call in full and asks\n", vis(list[0].BatchID))
	return err
}

// decideOne decides batch id as the flags say.
func decideOne(ctx context.Context, c *apiClient, f *approveFlags, id string, w io.Writer) error {
	b, err := c.batch(ctx, id)
	if err != nil {
		return err
	}
	if b.State != stateAwaitingApproval {
		return &decidedError{id: b.BatchID, state: b.State, by: b.DecidedBy}
	}
	d := decisionBody{Decision: "approve_all", By: approveBy}
	switch {
	case f.deny:
		d = decisionBody{Decision: "deny_all", Reason: f.reason, By: approveBy}
	case len(f.calls) > 0:
		awaiting := b.awaiting()
		var ids []string
		for _, id := range f.calls {
			// The id as the list shows it (engine.ShownID), which no two
			// calls share; the raw id could be another's shown one.
			i := slices.IndexFunc(awaiting, func(c heldCall) bool { return engine.ShownID(c.ID) == id })
			if i < 0 {
				return fmt.Errorf("batch %s has no call %s awaiting a decision; its calls awaiting one are %s: nothing was changed", vis(b.BatchID), engine.ShownID(id), callList(awaiting, nil))
			}
			id = awaiting[i].ID
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		d = decisionBody{Decision: "approve_selected", IDs: ids, Reason: f.reason, By: approveBy}
	}
	if _, err := c.decide(ctx, b.BatchID, d); err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, decided(b, d))
	return err
}

// decideAll decides every batch awaiting a decision: approves each, or
// with --deny denies each. A batch someone else decides meanwhile is
// said and skipped.
func decideAll(ctx context.Context, c *apiClient, f *approveFlags, w io.Writer) error {
	list, err := c.awaitingBatches(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		_, err := fmt.Fprintf(w, "nothing awaits a decision at %s\n", c.base)
		return err
	}
	d := decisionBody{Decision: "approve_all", By: approveBy}
	if f.deny {
		d = decisionBody{Decision: "deny_all", Reason: f.reason, By: approveBy}
	}
	var missed []error
	for _, b := range list {
		if _, err := c.decide(ctx, b.BatchID, d); err != nil {
			var de *decidedError
			if !errors.As(err, &de) {
				return err
			}
			missed = append(missed, err)
			continue
		}
		fmt.Fprintln(w, decided(b, d))
	}
	return errors.Join(missed...)
}

// decided says what decision d did to batch b.
func decided(b heldBatch, d decisionBody) string {
	awaiting := b.awaiting()
	var s string
	switch d.Decision {
	case "approve_all":
		s = fmt.Sprintf("approved batch %s: %s; it runs now", vis(b.BatchID), callList(awaiting, nil))
	case "deny_all":
		s = fmt.Sprintf("denied batch %s: %s", vis(b.BatchID), callList(awaiting, nil))
	default:
		var denied []heldCall
		for _, c := range awaiting {
			if !slices.Contains(d.IDs, c.ID) {
				denied = append(denied, c)
			}
		}
		s = fmt.Sprintf("approved %s of batch %s; it runs now", callList(awaiting, d.IDs), vis(b.BatchID))
		if len(denied) > 0 {
			s += "; denied the others: " + callList(denied, nil)
		}
	}
	if d.Reason != "" && d.Decision != "approve_all" {
		s += fmt.Sprintf(" (the model is told: %s)", vis(d.Reason))
	}
	return s
}

// callList names the calls of cs (those of only when it is not nil):
// "call w1 (write_file), call r2 (run_command)".
func callList(cs []heldCall, only []string) string {
	var names []string
	for _, c := range cs {
		if only == nil || slices.Contains(only, c.ID) {
			names = append(names, fmt.Sprintf("call %s (%s)", engine.ShownID(c.ID), vis(c.Name)))
		}
	}
	if len(names) == 0 {
		return "no call"
	}
	return strings.Join(names, ", ")
}

// session asks, at a terminal, about each call awaiting a decision, and
// with --watch about each held afterwards.
type session struct {
	c   *apiClient
	f   *approveFlags
	in  *termInput
	out io.Writer // the terminal: questions and what was decided
}

func (s *session) run(ctx context.Context) error {
	a := &approver{out: s.out, tty: true, width: termWidth(s.out)}
	// asked are the batches decided (or given up) in this session: one
	// the server still lists is not asked about again.
	asked := map[string]bool{}
	waiting := false
	for {
		list, err := s.c.awaitingBatches(ctx)
		if ctx.Err() != nil {
			return nil // Ctrl-C
		}
		if err != nil {
			return err
		}
		list = slices.DeleteFunc(list, func(b heldBatch) bool { return asked[b.BatchID] })
		if len(list) == 0 {
			if !s.f.watch {
				fmt.Fprintf(s.out, "nothing (more) awaits a decision at %s\n", s.c.base)
				return nil
			}
			if !waiting {
				fmt.Fprintf(s.out, "waiting for calls to decide at %s (Ctrl-C stops)\n", s.c.base)
				waiting = true
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(watchInterval):
			}
			continue
		}
		if waiting {
			io.WriteString(s.out, "\a") // a call arrived while the person looked elsewhere
			waiting = false
		}
		for _, b := range list {
			asked[b.BatchID] = true
			stop, err := s.ask(ctx, a, b.BatchID)
			if err != nil || stop {
				return err
			}
		}
	}
}

// ask asks about each call of batch id awaiting a decision and sends
// the answers as one decision; stop says to end the session: Ctrl-C, or
// the terminal closed, before every call was answered (nothing is sent
// then: the batch waits for another decision).
func (s *session) ask(ctx context.Context, a *approver, id string) (stop bool, err error) {
	b, err := s.c.batch(ctx, id)
	if ctx.Err() != nil {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if b.State != stateAwaitingApproval {
		fmt.Fprintln(s.out, (&decidedError{id: b.BatchID, state: b.State, by: b.DecidedBy}).Error())
		return false, nil
	}
	awaiting := b.awaiting()
	var yes []string
	for _, c := range awaiting {
		// Only an answer typed once the question shows counts: a line
		// typed ahead, before a call arrived, must not approve it.
		s.in.discard()
		ok := a.ask(bufio.NewReader(s.in), c.view())
		if ctx.Err() != nil || s.in.ended() {
			fmt.Fprintf(s.out, "\nstopped before deciding batch %s: it still awaits a decision\n", vis(b.BatchID))
			return true, nil
		}
		if ok {
			yes = append(yes, c.ID)
		}
	}
	d := decisionBody{Decision: "approve_selected", IDs: yes, By: approveBy}
	switch {
	case len(yes) == 0:
		d = decisionBody{Decision: "deny_all", Reason: s.f.reason, By: approveBy}
	case len(yes) < len(awaiting):
		d.Reason = s.f.reason
	}
	if _, err := s.c.decide(ctx, b.BatchID, d); err != nil {
		var de *decidedError
		if errors.As(err, &de) {
			fmt.Fprintln(s.out, "your answers were not sent: "+de.Error())
			return false, nil
		}
		if ctx.Err() != nil {
			return true, nil
		}
		return false, err
	}
	fmt.Fprintln(s.out, decided(b, d))
	return false, nil
}

// termWidth asks w's width each time (the window may be resized), when
// w is a terminal.
func termWidth(w io.Writer) func() int {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	return func() int {
		cols := 0
		withFd(f, func(fd int) {
			if c, _, err := term.GetSize(fd); err == nil {
				cols = c
			}
		})
		return cols
	}
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	is := false
	if f != nil {
		withFd(f, func(fd int) { is = term.IsTerminal(fd) })
	}
	return is
}

// withFd calls use with f's descriptor. It does not ask f.Fd(), which
// would make reads of f blocking for good: a read left waiting then
// outlives Close, holding the terminal open.
func withFd(f *os.File, use func(fd int)) {
	sc, err := f.SyscallConn()
	if err != nil {
		return
	}
	sc.Control(func(fd uintptr) { use(int(fd)) })
}

// termInput reads a terminal in a goroutine of its own: a read of a
// terminal cannot be interrupted, and Ctrl-C must end a question that
// waits for its answer, without answering it.
type termInput struct {
	ctx     context.Context
	chunks  chan chunk
	pending []byte
	err     error // how the input ended, once it did
}

type chunk struct {
	b   []byte
	err error
}

func newTermInput(ctx context.Context, r io.Reader) *termInput {
	t := &termInput{ctx: ctx, chunks: make(chan chunk)}
	go func() {
		for {
			buf := make([]byte, 4096)
			n, err := r.Read(buf)
			select {
			case t.chunks <- chunk{buf[:n], err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return t
}

func (t *termInput) Read(p []byte) (int, error) {
	for len(t.pending) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		select {
		case c := <-t.chunks:
			t.pending, t.err = c.b, c.err
		case <-t.ctx.Done():
			return 0, t.ctx.Err()
		}
	}
	n := copy(p, t.pending)
	t.pending = t.pending[n:]
	return n, nil
}

// discard drops what was typed and not read yet.
func (t *termInput) discard() {
	t.pending = nil
	for t.err == nil {
		select {
		case c := <-t.chunks:
			t.err = c.err
		default:
			return
		}
	}
}

// ended reports whether the input ended (the terminal closed, or
// Ctrl-D) with nothing left to read.
func (t *termInput) ended() bool { return t.err != nil && len(t.pending) == 0 }

package server

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// The HTTP batch API at /v1, for agents that run their
// own model loop: a batch is planned when it is posted, waits for a
// decision (or, in parse_only mode, for the results the client
// supplies), runs, and keeps its results and its events for a while.
// The decision endpoint is the approval, except for the calls the
// operator's --allow covers: those run without one, on every transport.

// openAPI describes every route under /v1; a test holds it to the mux.
//
//go:embed openapi.json
var openAPI []byte

// decidedByAPI names who decided in the results of calls decided
// through the API.
const decidedByAPI = "the batch API's client"

// decidedInConsole names the web console as who decided.
const decidedInConsole = "a person in the web console"

// decidedByAllow names the operator's standing approval, as the MCP
// approver does.
const decidedByAllow = "--allow"

// sseKeepalive is how often an idle event stream gets a comment, so
// proxies and clients do not time it out.
const sseKeepalive = 15 * time.Second

// callView is one call of a batch as the API shows it.
type callView struct {
	ID string `json:"id"`
	// JournalID names the call in the journal (BATCH.N): ID is its
	// client's, unique only in the batch.
	JournalID   string             `json:"journal_id"`
	Name        string             `json:"name"`
	Disposition engine.Disposition `json:"disposition"`
	// Summary, RiskLevel, Reason and AlwaysAsk are the confirmation of
	// a call that needs one.
	Summary   string        `json:"summary,omitempty"`
	RiskLevel abi.RiskLevel `json:"risk_level,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	AlwaysAsk bool          `json:"always_ask,omitempty"`
	// Approval is what a person deciding the call is shown, as every
	// approval surface shows it (engine.Approval): the arguments in full
	// and unredacted, the files, the summary's flags, the diff. Set
	// while the batch awaits a decision.
	Approval *engine.Approval `json:"approval,omitempty"`
	// ApprovalOmitted says that a list of batches left Approval out,
	// and where to read it.
	ApprovalOmitted string `json:"approval_omitted,omitempty"`
	// Result is set for a pre-resolved call, and for a pending call once
	// its result was submitted.
	Result *engine.Result `json:"result,omitempty"`

	// args are the call's arguments as they will run, served whole by
	// GET …/calls/N/arguments: the plan's own, not a copy.
	args json.RawMessage
}

// viewCall is call c, the nth (from 1) of batch batchID; a is what a
// person deciding it is shown, nil when it needs no decision.
func viewCall(batchID string, n int, c engine.Call, d engine.Disposition, a *engine.Approval, r *engine.Result) callView {
	v := callView{ID: c.ID, JournalID: journal.CallJournalID(batchID, n), Name: c.Name, Disposition: d, Result: copyResult(r),
		Approval: a, args: c.Arguments}
	if a != nil {
		v.Summary, v.RiskLevel, v.Reason, v.AlwaysAsk = a.Summary, a.Risk, a.Reason, a.AlwaysAsk
	}
	return v
}

// approval is what a person deciding call c, the nth of batch batchID,
// is shown through the API: engine.Approval, with arguments past its
// bound left to GET …/calls/N/arguments.
func (s *Server) approval(ctx context.Context, conversation string, n engine.Narrowing, c engine.Confirmation, batchID string, nth int) *engine.Approval {
	a := s.h.Inside(inside.Key{}).Engine.Approval(ctx, c, engine.ApprovalOptions{Conversation: conversation, Narrowing: n,
		FullAt: "GET " + argumentsPath(batchID, nth)})
	return &a
}

// argumentsPath is where the nth call's arguments are served whole.
func argumentsPath(batchID string, nth int) string {
	return batchPath(batchID, "calls/"+strconv.Itoa(nth)+"/arguments")
}

// batchView is a batch as every endpoint answers it.
type batchView struct {
	BatchID        string `json:"batch_id"`
	ConversationID string `json:"conversation_id"`
	State          string `json:"state"`
	// HeldForMCP marks an MCP client's call held for a decision, because
	// the client cannot be asked.
	HeldForMCP      bool            `json:"held_for_mcp"`
	CancelRequested bool            `json:"cancel_requested,omitempty"`
	DecidedBy       string          `json:"decided_by,omitempty"`
	CreatedAt       time.Time       `json:"created_at"`
	DecisionURL     string          `json:"decision_url,omitempty"`
	EventsURL       string          `json:"events_url"`
	Calls           []callView      `json:"calls"`
	Results         []engine.Result `json:"results,omitempty"`
}

func (b *batch) view() batchView {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := batchView{BatchID: b.id, ConversationID: b.conversation, State: b.state, HeldForMCP: b.mcp,
		CancelRequested: b.cancelled && !finished(b.state), DecidedBy: b.decidedBy, CreatedAt: b.created.UTC(),
		EventsURL: batchPath(b.id, "events"), Calls: slices.Clone(b.calls), Results: b.results}
	if b.state == stateAwaiting {
		v.DecisionURL = batchPath(b.id, "decision")
	} else {
		// What a person decides on is shown while there is a decision to
		// make: a list of finished batches does not resend it.
		for i := range v.Calls {
			v.Calls[i].Approval = nil
		}
	}
	return v
}

// copyResult is a copy of r the engine's later changes (it finishes a
// pre-resolved call's error as it runs) do not reach; nil for nil.
func copyResult(r *engine.Result) *engine.Result {
	if r == nil {
		return nil
	}
	c := *r
	if r.Error != nil {
		e := *r.Error
		c.Error = &e
	}
	return &c
}

func batchPath(id, action string) string {
	p := "/v1/batches/" + id
	if action != "" {
		p += "/" + action
	}
	return p
}

// route is one endpoint of the API.
type route struct {
	method, path string // path in ServeMux syntax
	handle       http.HandlerFunc
}

// apiRoutes are the /v1 endpoints; openapi.json must list exactly these.
func (s *Server) apiRoutes() []route {
	return []route{
		{"GET", "/v1/health", s.health},
		{"GET", "/v1/openapi.json", s.openAPIDocument},
		{"GET", "/v1/tools", s.listTools},
		{"POST", "/v1/batches", s.createBatch},
		{"GET", "/v1/batches", s.listBatches},
		{"GET", "/v1/batches/{id}", s.getBatch},
		{"POST", "/v1/batches/{id}/decision", s.decideBatch},
		{"POST", "/v1/batches/{id}/cancel", s.cancelBatch},
		{"POST", "/v1/batches/{id}/results", s.submitResults},
		{"GET", "/v1/batches/{id}/events", s.batchEvents},
		{"GET", "/v1/batches/{id}/calls/{n}/arguments", s.callArguments},
		{"GET", "/v1/journal/batches", s.listJournal},
		{"GET", "/v1/journal/batches/{id}", s.getJournalBatch},
		{"POST", "/v1/journal/batches/{id}/recover", s.recoverJournalBatch},
		{"POST", "/v1/journal/undo", s.undoJournal},
		{"POST", consoleLinksPath, s.newConsoleLink},
	}
}

// handleAPI registers the routes on mux, each path also answering other
// methods with 405 and the methods it takes.
func (s *Server) handleAPI(mux *http.ServeMux) {
	allowed := map[string][]string{}
	var paths []string
	for _, rt := range s.apiRoutes() {
		mux.HandleFunc(rt.method+" "+rt.path, rt.handle)
		if _, ok := allowed[rt.path]; !ok {
			paths = append(paths, rt.path)
		}
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	for _, p := range paths {
		methods := strings.Join(allowed[p], ", ")
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", methods)
			writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("%s %s: this endpoint takes %s; the API is described at GET /v1/openapi.json", r.Method, r.URL.Path, methods))
		})
	}
}

// health says the server runs, and how far its warm-up got: a client
// that wants its first calls fast (or a test timing them) waits for
// "done".
func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "warmup": s.warmupState()})
}

func (s *Server) openAPIDocument(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(openAPI)
}

// listTools gives the tools the policy offers, as definitions in the
// format asked for (the ones toolhost tools --format prints).
func (s *Server) listTools(w http.ResponseWriter, r *http.Request) {
	format := r.URL.Query().Get("format")
	if format == "" {
		format = "json"
	}
	if !slices.Contains(host.Formats(), format) {
		writeError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("GET /v1/tools: format %q is not one of %s; for example GET /v1/tools?format=openai", truncate(format, 40), strings.Join(host.Formats(), ", ")))
		return
	}
	defs, err := host.Definitions(s.h.Inside(inside.Key{}).Engine.Advertised(s.opts.Narrowing), format)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError", fmt.Sprintf("GET /v1/tools?format=%s: %v", format, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"format": format, "tools": defs})
}

// createRequest is the body of POST /v1/batches, the shape toolhost
// batch --file reads.
type createRequest struct {
	ConversationID string        `json:"conversation_id"`
	TurnID         string        `json:"turn_id"`
	Calls          []engine.Call `json:"calls"`
}

// createBatch plans a batch and keeps it: it runs at once when nothing
// needs a decision, else waits for one (or for submitted results).
func (s *Server) createBatch(w http.ResponseWriter, r *http.Request) {
	const where = "POST /v1/batches"
	var req createRequest
	if !s.decodeCreate(w, r, where, &req) {
		return
	}
	switch {
	case req.ConversationID == "":
		writeError(w, http.StatusBadRequest, "InvalidRequest", where+": conversation_id is missing; batches of one conversation share what was read (the stale-file rule), so name it, for example \"conversation_id\": \"agent-7\"")
		return
	case !validConversation(req.ConversationID):
		writeError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("%s: conversation_id %q is not a conversation id: use 1 to %d letters, digits, '.', '_', ':' or '-'", where, truncate(req.ConversationID, 40), maxConversationLen))
		return
	case req.TurnID != "" && !validConversation(req.TurnID):
		writeError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("%s: turn_id %q is not a turn id: use 1 to %d letters, digits, '.', '_', ':' or '-'", where, truncate(req.TurnID, 40), maxConversationLen))
		return
	case len(req.Calls) == 0:
		writeError(w, http.StatusBadRequest, "InvalidRequest", where+": calls is empty; send at least one {\"id\", \"name\", \"arguments\"}")
		return
	}
	for i := range req.Calls {
		if a := req.Calls[i].Arguments; len(a) == 0 || string(a) == "null" {
			req.Calls[i].Arguments = []byte("{}")
		}
	}
	if err := s.batches.fits(callBytes(req.Calls)); err != nil {
		writeAddError(w, where, err)
		return
	}
	p := s.h.Plan(r.Context(), engine.Batch{Conversation: req.ConversationID, Turn: req.TurnID, Calls: req.Calls}, s.opts.Narrowing)
	b := newBatch(s.stopping, p.Batch.ID, req.ConversationID, stateRunning, s.planViews(r.Context(), p))
	b.plan = p
	b.argBytes = callBytes(req.Calls)
	b.preapprove(s.opts.Allow)
	if err := s.batches.add(b); err != nil {
		b.cancel()
		writeAddError(w, where, err)
		return
	}
	b.mu.Lock()
	b.engineEventLocked(engine.EventPlanned)
	switch {
	case len(b.confirmations) > 0:
		b.engineEventLocked(engine.EventAwaitingApproval)
		b.setStateLocked(stateAwaiting)
	case outstanding(p) > 0:
		b.setStateLocked(statePending)
	default:
		// Nothing to approve, or --allow approved it all.
		v := verdict{Decision: "deny_all"}
		if len(b.preapproved) > 0 {
			v.By, b.decidedBy = decidedByAllow, decidedByAllow
		}
		b.setStateLocked(stateRunning)
		b.decided <- v
	}
	b.mu.Unlock()
	go s.drive(b)
	s.log.Info("batch API: batch planned", "batch", b.id, "conversation", b.conversation, "calls", len(b.calls), "awaiting", len(b.confirmations))
	writeJSON(w, http.StatusCreated, b.view())
}

// planViews are the calls of p as the API shows them, each that needs a
// decision with what a person deciding it is shown.
func (s *Server) planViews(ctx context.Context, p *engine.Plan) []callView {
	views := make([]callView, len(p.Calls))
	for i, pc := range p.Calls {
		var a *engine.Approval
		if pc.Confirmation != nil {
			a = s.approval(ctx, p.Batch.Conversation, s.opts.Narrowing, *pc.Confirmation, p.Batch.ID, i+1)
		}
		views[i] = viewCall(p.Batch.ID, i+1, pc.Call, pc.Disposition, a, pc.Result)
	}
	return views
}

// outstanding counts a parse_only plan's calls still waiting for a
// submitted result.
func outstanding(p *engine.Plan) int {
	n := 0
	for _, pc := range p.Calls {
		if pc.Disposition == engine.Pending && pc.Result == nil {
			n++
		}
	}
	return n
}

func writeAddError(w http.ResponseWriter, where string, err error) {
	var full errTooManyBatches
	if errors.As(err, &full) {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, "TooManyBatches", where+": "+err.Error())
		return
	}
	writeError(w, http.StatusConflict, "Conflict", where+": "+err.Error())
}

// drive runs an API batch once it is decided (or its results are all
// submitted), unless it is cancelled first.
func (s *Server) drive(b *batch) {
	var v verdict
	select {
	case v = <-b.decided:
	case <-b.ctx.Done():
		select {
		case v = <-b.decided: // decided, then cancelled: it runs cancelled
		default:
			// Cancelled before it ran: by a client, who ended it, or by
			// the server shutting down.
			b.mu.Lock()
			if !finished(b.state) {
				b.cancelBeforeLocked("toolhost serve shut down before it ran")
			}
			results, plan := b.results, b.plan
			b.mu.Unlock()
			s.h.Abandon(context.WithoutCancel(b.ctx), plan, results)
			b.release()
			return
		}
	}
	results := s.h.Run(b.ctx, b.plan, v.decision(b.preapproved), host.BatchOptions{Events: b, Narrowing: s.opts.Narrowing})
	b.finish(results)
	s.log.Info("batch API: batch ended", "batch", b.id, "state", b.view().State)
}

func (s *Server) listBatches(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	states := []string{stateAwaiting, statePending, stateRunning, stateDone, stateCancelled}
	if state != "" && !slices.Contains(states, state) {
		writeError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("GET /v1/batches: state %q is not one of %s", truncate(state, 40), strings.Join(states, ", ")))
		return
	}
	views := []batchView{}
	var shown int64
	left := 0
	for _, b := range s.batches.list() {
		v := b.view()
		if state != "" && v.State != state {
			continue
		}
		// The list is built whole before it is sent: past its bound, a
		// batch's views are left out, and GET /v1/batches/{id} shows them.
		var n int64
		for _, c := range v.Calls {
			if c.Approval != nil {
				n += c.Approval.HeldBytes()
			}
		}
		if n > 0 && shown+n > maxListedViewBytes {
			for i := range v.Calls {
				if v.Calls[i].Approval != nil {
					v.Calls[i].Approval = nil
					v.Calls[i].ApprovalOmitted = "left out of this list: GET " + batchPath(v.BatchID, "") + " shows it"
					left++
				}
			}
		} else {
			shown += n
		}
		views = append(views, v)
	}
	answer := map[string]any{"batches": views}
	if left > 0 {
		answer["omitted"] = fmt.Sprintf("%d approval views are left out of this list, which shows at most %s of them: each call left out says so (approval_omitted), and GET /v1/batches/{id} shows its batch whole", left, mib(maxListedViewBytes))
	}
	writeJSON(w, http.StatusOK, answer)
}

// maxListedViewBytes bounds the approval views one list of batches
// shows (engine.Approval.HeldBytes): a list of every held batch, each
// holding megabytes of arguments and diffs, would be built whole in
// memory, hundreds of MiB for one request.
const maxListedViewBytes = 16 << 20

// lookup is the batch the request's path names; it answers 404 itself.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*batch, bool) {
	id := r.PathValue("id")
	b, ok := s.batches.get(id)
	if !ok {
		writeError(w, http.StatusNotFound, "UnknownBatch", fmt.Sprintf("%s %s: no batch %q: it was never created, or it finished more than %v ago and was forgotten; GET /v1/batches lists the batches kept", r.Method, r.URL.Path, truncate(id, 80), s.batches.retention))
	}
	return b, ok
}

func (s *Server) getBatch(w http.ResponseWriter, r *http.Request) {
	if b, ok := s.lookup(w, r); ok {
		writeJSON(w, http.StatusOK, b.view())
	}
}

// callArguments serves the arguments of a batch's nth call (from 1)
// whole, as they will run: unredacted, and however large, for a person
// deciding a call whose approval view leaves them out as larger than
// engine.MaxApprovalArgumentBytes. They are written from the plan's own
// copy, never copied again.
func (s *Server) callArguments(w http.ResponseWriter, r *http.Request) {
	b, ok := s.lookup(w, r)
	if !ok {
		return
	}
	b.mu.Lock()
	calls := len(b.calls)
	n, err := strconv.Atoi(r.PathValue("n"))
	var args json.RawMessage
	if err == nil && n >= 1 && n <= calls {
		args = b.calls[n-1].args
	}
	b.mu.Unlock()
	if args == nil || strconv.Itoa(n) != r.PathValue("n") {
		writeError(w, http.StatusNotFound, "UnknownCall", fmt.Sprintf("GET %s: batch %s has no call %q: calls are numbered from 1 to %d, in the order of the batch", batchPath(b.id, "calls/…/arguments"), b.id, truncate(r.PathValue("n"), 20), calls))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Length", strconv.Itoa(len(args)))
	w.Write(args)
}

type decisionRequest struct {
	Decision string   `json:"decision"`
	IDs      []string `json:"ids"`
	// Reason is why calls are denied, given to the model in their
	// results.
	Reason string `json:"reason"`
	// By names the program deciding, such as "toolhost approve"; the
	// results say the call was decided by it through the batch API.
	By string `json:"by"`
}

// Bounds of a decision's free text: a reason is a sentence or two for
// the model, a program's name a few words.
const (
	maxReasonBytes = 2000
	maxByBytes     = 64
)

// decidedBy names who decided a batch by req: the console for a request
// of its session, else the batch API's client, named as req.By says.
func decidedBy(ctx context.Context, req decisionRequest) string {
	if fromConsole(ctx) {
		return decidedInConsole
	}
	if req.By != "" {
		// Quoted as a program's name: the words cannot pass for a
		// decider the server names itself, such as the console.
		return fmt.Sprintf("the batch API's client %q", req.By)
	}
	return decidedByAPI
}

// decideBatch answers a batch awaiting approval: an API batch then runs,
// a held MCP call gets its answer.
func (s *Server) decideBatch(w http.ResponseWriter, r *http.Request) {
	b, ok := s.lookup(w, r)
	if !ok {
		return
	}
	where := "POST " + batchPath(b.id, "decision")
	var req decisionRequest
	if !decodeBody(w, r, where, &req) {
		return
	}
	if msg := b.checkDecision(req); msg != "" {
		writeError(w, http.StatusBadRequest, "InvalidRequest", where+": "+msg)
		return
	}
	by := decidedBy(r.Context(), req)
	v := verdict{Decision: req.Decision, IDs: req.IDs, By: by, Reason: engine.Visible(req.Reason)}
	if !b.claim(by) {
		writeStateConflict(w, where, b, "decided")
		return
	}
	b.decided <- v
	s.log.Info("batch API: decision", "batch", b.id, "decision", req.Decision, "ids", req.IDs, "mcp", b.mcp)
	writeJSON(w, http.StatusOK, b.view())
}

// checkDecision says what is wrong with a decision for b, "" if nothing.
// It holds b.mu: results submitted meanwhile write into b.calls.
func (b *batch) checkDecision(req decisionRequest) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	decisions := "approve_all, deny_all or approve_selected"
	switch {
	case len(req.Reason) > maxReasonBytes:
		return fmt.Sprintf("reason has %d bytes, more than the %d a reason may: say it in a sentence or two", len(req.Reason), maxReasonBytes)
	case !utf8.ValidString(req.Reason):
		return "reason is not valid UTF-8"
	case req.Reason != "" && req.Decision == "approve_all":
		return "reason goes with deny_all, or with approve_selected for the calls it denies; approve_all denies none"
	case len(req.By) > maxByBytes || !validBy(req.By):
		return fmt.Sprintf("by %q is not a program's name: use 1 to %d letters, digits, spaces, '.', '_', '/' or '-', such as \"toolhost approve\"", truncate(req.By, 80), maxByBytes)
	}
	switch req.Decision {
	case "":
		return "decision is missing: send {\"decision\": \"approve_all\"}, {\"decision\": \"deny_all\"} or {\"decision\": \"approve_selected\", \"ids\": [...]}"
	case "approve_all", "deny_all":
		if len(req.IDs) > 0 {
			return fmt.Sprintf("ids go only with approve_selected; %s decides every call", req.Decision)
		}
		return ""
	case "approve_selected":
	default:
		return fmt.Sprintf("decision %q is not one of %s", truncate(req.Decision, 40), decisions)
	}
	if len(req.IDs) == 0 {
		return "approve_selected needs ids, the calls to approve; deny_all approves none"
	}
	var unknown []string
	for _, id := range req.IDs {
		if !b.confirmations[id] {
			unknown = append(unknown, strconv.Quote(truncate(id, 80)))
		}
	}
	if len(unknown) > 0 {
		var want []string
		for _, c := range b.calls {
			if b.confirmations[c.ID] {
				want = append(want, strconv.Quote(c.ID))
			}
		}
		if len(want) == 0 {
			return fmt.Sprintf("ids %s are not calls of batch %s that await approval; none does, it is %s (GET %s shows it)", strings.Join(unknown, ", "), b.id, b.state, batchPath(b.id, ""))
		}
		return fmt.Sprintf("ids %s are not calls of batch %s that await approval; those are %s", strings.Join(unknown, ", "), b.id, strings.Join(want, ", "))
	}
	return ""
}

// claim moves a batch awaiting approval to running, decided by by; it
// reports false when the batch no longer awaits one. Whoever claims it
// sends the one verdict.
func (b *batch) claim(by string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.claimLocked(by)
}

// claimLocked is claim with b.mu held.
func (b *batch) claimLocked(by string) bool {
	if b.state != stateAwaiting {
		return false
	}
	b.decidedBy = by
	b.setStateLocked(stateRunning)
	return true
}

func writeStateConflict(w http.ResponseWriter, where string, b *batch, what string) {
	st := b.view().State
	writeError(w, http.StatusConflict, "StateConflict", fmt.Sprintf("%s: batch %s is %s, so it cannot be %s; GET %s shows it", where, b.id, st, what, batchPath(b.id, "")))
}

// cancelBatch stops a batch: one awaiting a decision or results ends
// with every call that did not run cancelled; a running one is stopped
// (its commands' process groups are killed) and ends cancelled; a held
// MCP call is denied. Cancelling a cancelled batch answers it again;
// only a done one is a conflict.
func (s *Server) cancelBatch(w http.ResponseWriter, r *http.Request) {
	b, ok := s.lookup(w, r)
	if !ok {
		return
	}
	where := "POST " + batchPath(b.id, "cancel")
	who := decidedBy(r.Context(), decisionRequest{})
	b.mu.Lock()
	switch {
	case b.mcp && b.claimLocked(who+", who cancelled the call"):
		b.cancelled = true
		b.decided <- verdict{Decision: "deny_all", By: b.decidedBy}
	case b.state == stateAwaiting || b.state == statePending:
		b.cancelBeforeLocked(fmt.Sprintf("%s cancelled batch %s (%s) before it ran", who, b.id, where))
	case b.state == stateRunning:
		b.cancelled = true
		b.cancel()
	case b.state == stateCancelled:
		// Already cancelled: a client sending its cancel again (its answer
		// lost) gets the same answer.
	default:
		b.mu.Unlock()
		writeStateConflict(w, where, b, "cancelled")
		return
	}
	b.mu.Unlock()
	s.log.Info("batch API: cancel", "batch", b.id)
	writeJSON(w, http.StatusOK, b.view())
}

type resultsRequest struct {
	Results []submittedResult `json:"results"`
}

type submittedResult struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	IsError bool   `json:"is_error"`
}

// submitResults records results for a parse_only batch's pending calls;
// once each has one the batch runs (which only reports them) and ends.
func (s *Server) submitResults(w http.ResponseWriter, r *http.Request) {
	b, ok := s.lookup(w, r)
	if !ok {
		return
	}
	where := "POST " + batchPath(b.id, "results")
	var req resultsRequest
	if !decodeBody(w, r, where, &req) {
		return
	}
	if len(req.Results) == 0 {
		writeError(w, http.StatusBadRequest, "InvalidRequest", where+": results is empty; send [{\"id\", \"content\", \"is_error\"}] for the pending calls")
		return
	}
	// What is wrong with the results is said before the budget is: the
	// batch's lock cannot be held while the registry's is taken.
	if status, kind, msg := b.refuseResults(req.Results); status != 0 {
		writeError(w, status, kind, where+": "+msg)
		return
	}
	// The results are kept as long as the batch: they count against the
	// budget before they are taken, so a refusal keeps none of them.
	n := submittedBytes(req.Results)
	if err := s.batches.reserve(b, n); err != nil {
		writeAddError(w, where, err)
		return
	}
	if status, kind, msg := b.resolve(req.Results, n); status != 0 {
		s.batches.charge(b, -n) // taken back: none was kept
		writeError(w, status, kind, where+": "+msg)
		return
	}
	writeJSON(w, http.StatusOK, b.view())
}

// submittedBytes is what submitted results hold once kept.
func submittedBytes(rs []submittedResult) int64 {
	var n int64
	for _, sr := range rs {
		n += int64(len(sr.ID) + len(sr.Content))
	}
	return n
}

// resolve records submitted results, which hold size bytes; when every
// pending call has one, the batch runs. It returns the status, kind and
// message of a refusal, or 0.
func (b *batch) resolve(rs []submittedResult, size int64) (status int, kind, msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Checked again: another submission may have come since.
	if status, kind, msg := b.refuseResultsLocked(rs); status != 0 {
		return status, kind, msg
	}
	for _, sr := range rs {
		if err := b.plan.Resolve(sr.ID, sr.Content, sr.IsError); err != nil {
			return http.StatusBadRequest, "InvalidRequest", err.Error()
		}
		i := slices.IndexFunc(b.calls, func(c callView) bool { return c.ID == sr.ID })
		b.calls[i].Result = copyResult(b.plan.Calls[i].Result)
	}
	b.submitted += size
	if outstanding(b.plan) == 0 {
		b.setStateLocked(stateRunning)
		b.decided <- verdict{Decision: "deny_all"}
	}
	return 0, "", ""
}

// refuseResults is the status, kind and message of a refusal of rs by
// b, or 0.
func (b *batch) refuseResults(rs []submittedResult) (status int, kind, msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refuseResultsLocked(rs)
}

func (b *batch) refuseResultsLocked(rs []submittedResult) (status int, kind, msg string) {
	if b.state != statePending {
		return http.StatusConflict, "StateConflict", fmt.Sprintf("batch %s is %s, not %s: results are taken only for calls pending in parse_only mode", b.id, b.state, statePending)
	}
	if msg := b.checkResultsLocked(rs); msg != "" {
		return http.StatusBadRequest, "InvalidRequest", msg
	}
	return 0, "", ""
}

// checkResultsLocked says what is wrong with submitted results, "" if
// nothing: each must name a pending call without a result, once.
func (b *batch) checkResultsLocked(rs []submittedResult) string {
	seen := map[string]bool{}
	var pending []string
	for i, c := range b.calls {
		if c.Disposition == engine.Pending && b.plan.Calls[i].Result == nil {
			pending = append(pending, strconv.Quote(c.ID))
		}
	}
	for _, sr := range rs {
		i := slices.IndexFunc(b.calls, func(c callView) bool { return c.ID == sr.ID })
		switch {
		case seen[sr.ID]:
			return fmt.Sprintf("call %q has two results; send one", truncate(sr.ID, 80))
		case i < 0 || b.calls[i].Disposition != engine.Pending:
			return fmt.Sprintf("%q is not a pending call of batch %s; the pending calls without a result are %s", truncate(sr.ID, 80), b.id, strings.Join(pending, ", "))
		case b.plan.Calls[i].Result != nil:
			return fmt.Sprintf("call %q already has a result; the pending calls without one are %s", sr.ID, strings.Join(pending, ", "))
		}
		seen[sr.ID] = true
	}
	return ""
}

// batchEvents streams a batch's events as Server-Sent Events: each with
// its number as id and its kind as event, from after Last-Event-ID (all
// of them without one), ending after the batch's last event. The stream
// reads the batch's log without holding the batch: a slow reader misses
// nothing the log keeps, and is told how many events it missed that the
// log no longer keeps.
func (s *Server) batchEvents(w http.ResponseWriter, r *http.Request) {
	b, ok := s.lookup(w, r)
	if !ok {
		return
	}
	var last int64
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		n, err := strconv.ParseInt(h, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("GET %s: Last-Event-ID %q is not an event id: send the id: of the last event received, a whole number", batchPath(b.id, "events"), truncate(h, 40)))
			return
		}
		last = n
	}
	release, err := s.batches.acquireStream(b)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, "TooManyStreams", fmt.Sprintf("GET %s: %v", batchPath(b.id, "events"), err))
		return
	}
	defer release()
	rc := http.NewResponseController(w)
	// Every write must be read within the timeout: a client that stops
	// reading is dropped rather than holding the handler and its place.
	arm := func() { rc.SetWriteDeadline(time.Now().Add(s.batches.streamWriteTimeout)) }
	defer rc.SetWriteDeadline(time.Time{})
	arm()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	keep := time.NewTicker(sseKeepalive)
	defer keep.Stop()
	for {
		b.mu.Lock()
		events, missed, ended, changed := b.log.since(last)
		b.mu.Unlock()
		arm()
		if missed > 0 {
			data, _ := json.Marshal(missedEvent{Kind: eventMissed, BatchID: b.id, Missed: missed,
				Message: fmt.Sprintf("%d events of batch %s are no longer kept (a batch's log keeps its last %d events, %d MiB); its last event still says how it ended", missed, b.id, maxLogEvents, maxLogBytes>>20)})
			last += missed
			if writeSSE(w, logEvent{ID: last, Kind: eventMissed, Data: data}) != nil {
				return
			}
		}
		for _, ev := range events {
			if writeSSE(w, ev) != nil {
				return
			}
			last = ev.ID
		}
		if len(events) > 0 || missed > 0 {
			if rc.Flush() != nil {
				return
			}
		}
		if ended && len(events) == 0 || len(events) > 0 && events[len(events)-1].final {
			return
		}
		select {
		case <-changed:
		case <-keep.C:
			arm()
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.stopping.Done():
			return // the server shuts down: streams must not hold it
		}
	}
}

func writeSSE(w io.Writer, ev logEvent) error {
	_, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.ID, ev.Kind, ev.Data)
	return err
}

// decodeBody reads a request's JSON body into v, strictly: an unknown
// field is an error that names it. It answers 400 or 413 itself.
func decodeBody(w http.ResponseWriter, r *http.Request, where string, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "RequestTooLarge", fmt.Sprintf("%s: the body is larger than the %d bytes this server accepts: send less at once (split a batch's calls over several batches, or its results over several submissions)", where, tooBig.Limit))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "InvalidRequest", where+": the body is empty; send a JSON object (GET /v1/openapi.json describes it)")
	default:
		writeError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("%s: the body is not the JSON this endpoint takes (GET /v1/openapi.json describes it): %v", where, err))
	}
	return false
}

// validBy reports whether by is "" or a plain program name, one that
// cannot pass for a sentence of the result it is quoted in.
func validBy(by string) bool {
	for _, r := range by {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case r == ' ' || r == '.' || r == '_' || r == '/' || r == '-':
		default:
			return false
		}
	}
	return strings.TrimSpace(by) == by
}

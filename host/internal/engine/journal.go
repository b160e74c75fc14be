package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/secrets"
)

// Journal durably records what a batch asks, what is decided, what runs
// and what comes of it, so that a crash never leaves a call unrecorded and
// recovery never re-runs one (FR-RES-01, FR-RES-04a/b, NFR-REL-01/04).
//
// The engine owns this interface and writes in steps, each of which Record
// must commit as one transaction before it returns nil. The engine folds
// into one step everything that must be durable before the next thing
// happens: the batch (with its calls and the decisions on them) before
// anyone is asked or the first call starts, and each result with the next
// call's start, or with the batch's end. So every call's start is
// committed before it runs and every result before the next call starts,
// at N+1 commits for N calls. A call whose step fails does not run, and
// its result says why.
//
// Implementations must be safe for concurrent use; the engine serializes
// the steps of one batch. The engine passes a context that the batch's
// cancellation does not end, so that a cancelled call's result is still
// recorded.
type Journal interface {
	Record(ctx context.Context, batchID string, s JournalStep) error
	// RecordProcess records, as soon as a running call's command has
	// started, the process group (and session) pid it runs in, so that
	// recovery can kill what a crash left of it.
	RecordProcess(ctx context.Context, batchID, callID string, pid int) error
	// RecordPreimages records, in one transaction, what files held
	// just before a running call changes them: their
	// pre-images, kept for undo; the call's first pre-image of a path
	// stands. A file whose Content is not whole (longer than
	// MaxPreimageBytes) is recorded as not undoable. An error refuses
	// the change.
	RecordPreimages(ctx context.Context, batchID, callID string, files []JournalFile) error
	// RecordPostimages records, in one transaction, what a call's
	// change left at files it changed, so that undo can tell whether
	// they changed since.
	RecordPostimages(ctx context.Context, batchID, callID string, files []JournalFile) error
	// MaxPreimageBytes is the most previous content one pre-image keeps.
	MaxPreimageBytes() int64
}

// JournalFile is a file's state before or after a call changes it.
type JournalFile struct {
	Path   string // canonical absolute path
	Exists bool
	Mode   fs.FileMode // permission bits
	Size   int64
	// Content is the previous content, whole when its length is Size;
	// pre-images only.
	Content []byte
	// SHA256 is the content's digest, hex; postimages only.
	SHA256 string
}

// JournalStep is what one commit records for a batch, in this order.
type JournalStep struct {
	Batch     *JournalBatch // the first step only
	Decisions []JournalDecision
	Results   []JournalResult
	Start     string // the id of the call about to run, if any
	End       bool   // every call has its result
}

// JournalBatch is a planned batch as the journal records it.
type JournalBatch struct {
	ID           string
	Conversation string
	Turn         string
	Calls        []JournalCall // in call order
}

// JournalCall is one planned call. ID is its client's id, unique within
// the batch: a call whose own id is empty or repeated (which never runs)
// gets its id with "#N", N its place in the batch. The journal gives
// every call an id of its own, unique in the journal, from the batch's
// id and the call's place.
type JournalCall struct {
	ID   string
	Tool string
	// Path is the first path the call names (its tool's first path
	// argument), as the sandbox resolved it when it could, so that the
	// history can say what the call was about.
	Path string
	// Arguments are the call's arguments as JSON with secrets redacted
	// as in approval summaries (FR-APR-01): the journal outlives the batch
	// and is read by people and log pipelines.
	Arguments   json.RawMessage
	Disposition Disposition
	// Result is set for a call resolved while planning (PreResolved),
	// which never starts.
	Result *Result
}

// JournalDecision is the decision on one call that needed confirmation.
type JournalDecision struct {
	CallID   string
	Approved bool
	By       string
}

// JournalResult is the result of one call, by its journal id.
type JournalResult struct {
	CallID string
	Result Result
}

// journalState is a plan's place in the journal.
type journalState struct {
	mu sync.Mutex
	// begun: the batch is pending or committed.
	begun bool
	// err is why the batch could not be recorded: no call of it runs.
	err error
	// ids are the calls' ids in the journal (JournalCall.ID).
	ids []string
	// resolved are the calls recorded with their result with the batch.
	resolved []int
	// pending is what waits for the next commit: the batch itself until
	// someone is asked or a call starts, decisions, and results.
	pending JournalStep
}

func (s *journalState) preResolved(i int) bool { return slices.Contains(s.resolved, i) }

// journalCtx keeps journal writes going when the batch is cancelled: a
// cancelled call's result must be recorded too.
func journalCtx(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// beginJournal prepares the planned batch's record, once. A plan that
// will ask someone, or wait for submitted results, is committed at once,
// before anyone is asked (FR-RES-04a); any other waits for its first
// call's start, and is committed with it.
//
// A batch narrowed to a dry run (Narrowing.DryRun: an approval's
// preview) is not recorded: it can change nothing and start no command,
// so there is nothing to recover or undo, and the history shows the
// batch the person was asked about, not each preview drawn for it.
func (e *Engine) beginJournal(ctx context.Context, p *Plan) {
	if e.cfg.Journal == nil || p.journal.begun || p.dryRun {
		return
	}
	p.journal.begun = true
	p.journal.ids = journalIDs(p.Batch.Calls)
	jb := JournalBatch{ID: p.Batch.ID, Conversation: p.Batch.Conversation, Turn: p.Batch.Turn, Calls: make([]JournalCall, len(p.Calls))}
	waits := false
	for i := range p.Calls {
		pc := &p.Calls[i]
		// What was planned: a call changed since does not run.
		jc := JournalCall{ID: p.journal.ids[i], Tool: pc.planned.Name, Path: e.firstPath(pc), Arguments: e.redactArgs(pc.planned.Arguments), Disposition: pc.plannedDisp}
		if pc.plannedDisp == PreResolved && pc.Result != nil {
			r := e.finish(*pc.Result)
			jc.Result = &r
			p.journal.resolved = append(p.journal.resolved, i)
		}
		waits = waits || pc.plannedDisp == RequiresConfirmation || pc.plannedDisp == Pending
		jb.Calls[i] = jc
	}
	p.journal.pending.Batch = &jb
	if waits {
		e.commitJournal(ctx, p, "")
	}
}

// commitJournal commits what is pending, with the start of the call with
// journal id start if any. It returns why it could not; a failure to
// record the batch itself (or its decisions) stops every call of it.
func (e *Engine) commitJournal(ctx context.Context, p *Plan, start string) error {
	s := &p.journal
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	step := s.pending
	step.Start = start
	if step.Batch == nil && len(step.Decisions) == 0 && len(step.Results) == 0 && start == "" && !step.End {
		return nil
	}
	err := e.cfg.Journal.Record(journalCtx(ctx), p.Batch.ID, step)
	if err == nil {
		s.pending = JournalStep{}
		return nil
	}
	switch {
	case step.Batch != nil || len(step.Decisions) > 0:
		s.err = err
		e.log.Error("cannot record the batch in the journal; none of its calls runs", "batch", p.Batch.ID, "err", err)
	case start != "":
		e.log.Error("cannot record a call's start in the journal; the call does not run", "batch", p.Batch.ID, "call", start, "err", err)
	default:
		e.log.Error("cannot record the batch's last results in the journal; after a crash they show as interrupted", "batch", p.Batch.ID, "err", err)
	}
	return err
}

// decideJournal adds d, for the calls that needed confirmation, to what
// is committed before the first call runs.
// A plan whose journal never began (an approval's dry run, which is not
// recorded) has no journal ids: nothing of it is recorded.
func (e *Engine) decideJournal(p *Plan, d Decision) {
	if e.cfg.Journal == nil || !p.journal.begun {
		return
	}
	s := &p.journal
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, pc := range p.Calls {
		if pc.Disposition == RequiresConfirmation {
			s.pending.Decisions = append(s.pending.Decisions, JournalDecision{CallID: s.ids[i], Approved: d.approves(pc.Call.ID), By: decidedBy(d)})
		}
	}
}

func decidedBy(d Decision) string {
	if d.By == "" {
		return "the user"
	}
	return d.By
}

// journaled runs call i through run. run calls start right before the
// call runs, which commits the start with whatever is pending; a call
// resolved without running (a denial, a cancellation) has no start, and
// one whose start the journal cannot commit does not run: start's error
// is its result. The result joins what is pending, committed with the
// next start or the batch's end (FR-RES-04b).
func (e *Engine) journaled(ctx context.Context, p *Plan, i int, run func(start func() error) Result) Result {
	s := &p.journal
	if e.cfg.Journal == nil || !s.begun {
		return run(func() error { return nil }) // no journal, or a dry run (beginJournal)
	}
	if s.preResolved(i) {
		return run(func() error { return nil }) // recorded with the batch; it never starts
	}
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		// The batch could not be recorded: no call of it runs or is
		// denied, and each says why.
		return e.finish(unrecorded(p.Calls[i].Call, err))
	}
	id := s.ids[i]
	res := run(func() error { return e.commitJournal(ctx, p, id) })
	s.mu.Lock()
	if s.err == nil {
		s.pending.Results = append(s.pending.Results, JournalResult{CallID: id, Result: res})
	}
	s.mu.Unlock()
	return res
}

// callJournal is the journal as the host functions of call i see it.
type callJournal struct {
	ctx     context.Context
	e       *Engine
	batchID string
	callID  string
}

func (e *Engine) callJournal(ctx context.Context, p *Plan, i int) hostfn.CallJournal {
	if e.cfg.Journal == nil || !p.journal.begun {
		return nil
	}
	return &callJournal{ctx: journalCtx(ctx), e: e, batchID: p.Batch.ID, callID: p.journal.ids[i]}
}

func (c *callJournal) ProcessStarted(pid int) error {
	if err := c.e.cfg.Journal.RecordProcess(c.ctx, c.batchID, c.callID, pid); err != nil {
		c.e.log.Error("cannot record a command's process group in the journal; the command is stopped", "batch", c.batchID, "id", c.callID, "pgid", pid, "err", err)
		return fmt.Errorf("toolhost records every command's process group in its journal before letting it run, and recording process group %d failed: %w", pid, err)
	}
	return nil
}

func (c *callJournal) MaxPreimageBytes() int64 { return c.e.cfg.Journal.MaxPreimageBytes() }

func (c *callJournal) BeforeChange(ctx context.Context, files []hostfn.FileState) error {
	jf := make([]JournalFile, len(files))
	for i, f := range files {
		jf[i] = JournalFile{Path: f.Path, Exists: f.Exists, Mode: f.Mode, Size: f.Size, Content: f.Content}
	}
	if err := c.e.cfg.Journal.RecordPreimages(journalCtx(ctx), c.batchID, c.callID, jf); err != nil {
		c.e.log.Error("cannot record the previous content of files in the journal; they are not changed", "batch", c.batchID, "id", c.callID, "err", err)
		return err
	}
	return nil
}

func (c *callJournal) AfterChange(ctx context.Context, files []hostfn.FileState) {
	jf := make([]JournalFile, len(files))
	for i, f := range files {
		jf[i] = JournalFile{Path: f.Path, Exists: f.Exists, Mode: f.Mode, Size: f.Size, SHA256: hex.EncodeToString(f.SHA256[:])}
	}
	if err := c.e.cfg.Journal.RecordPostimages(journalCtx(ctx), c.batchID, c.callID, jf); err != nil {
		c.e.log.Error("cannot record what a call's change left in the journal; undoing it will be refused", "batch", c.batchID, "id", c.callID, "err", err)
	}
}

// endJournal commits the last results with the batch's end.
func (e *Engine) endJournal(ctx context.Context, p *Plan) {
	if e.cfg.Journal == nil || !p.journal.begun {
		return
	}
	p.journal.mu.Lock()
	p.journal.pending.End = true
	p.journal.mu.Unlock()
	e.commitJournal(ctx, p, "") // logs what it could not record
}

// unrecorded is the result of a call that did not run because the journal
// could not record it first.
func unrecorded(call Call, err error) Result {
	return failed(call, &ToolError{Kind: abi.KindExecutionFailed, Message: fmt.Sprintf(
		"call %s (%s) did not run: toolhost records every call in its journal before running it, and recording failed: %v",
		call.ID, call.Name, err)})
}

// journalIDs are the calls' ids, made unique: an empty or repeated id
// (a call that never runs) becomes "ID#N", N its place in the batch.
func journalIDs(calls []Call) []string {
	seen := make(map[string]int, len(calls))
	for _, c := range calls {
		seen[c.ID]++
	}
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
		if c.ID == "" || seen[c.ID] > 1 {
			ids[i] = fmt.Sprintf("%s#%d", c.ID, i+1)
		}
	}
	return ids
}

// NewBatchID is a new batch id, unique in the journal: a millisecond
// clock, then randomness, so that ids sort by creation and the journal's
// indexes take each new batch at their end rather than at a random page.
// Plan gives a batch without an id one; a caller that must name a call
// before planning (a call without a client's id is named by its journal
// id) takes one first.
func NewBatchID() string {
	var b [10]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	rand.Read(b[6:])
	return "batch_" + hex.EncodeToString(b[:])
}

// mintedID reports whether id is spelled as an id toolhost gives itself: a
// batch id NewBatchID makes, alone or with a call's place after it
// (journal.CallJournalID). A client may not name its call so (batchCheck):
// an operator naming such an id to undo or show it must reach the one
// call toolhost gave it to.
func mintedID(id string) bool {
	rest, ok := strings.CutPrefix(id, "batch_")
	if !ok || len(rest) < 20 {
		return false
	}
	if _, err := hex.DecodeString(rest[:20]); err != nil {
		return false
	}
	place, ok := strings.CutPrefix(rest[20:], ".")
	if !ok {
		return rest[20:] == ""
	}
	return place != "" && strings.Trim(place, "0123456789") == ""
}

// firstPath is the first path pc's call names: its tool's first path
// argument given (the first element of an array of them), as the sandbox
// resolved it when planning did, redacted as its arguments are.
func (e *Engine) firstPath(pc *PlannedCall) string {
	if pc.tool == nil || len(pc.tool.Manifest.PathArgs) == 0 {
		return ""
	}
	var decoded any
	if json.Unmarshal(args(pc.planned), &decoded) != nil {
		return ""
	}
	for _, f := range pathArgs(pc.tool.Manifest.PathArgs, decoded) {
		if f.Absent {
			continue
		}
		given := f.Text
		if p, ok := pc.resolved[given]; ok && p.Abs != "" {
			given = p.Abs
		} else {
			// A path the sandbox refused is the model's text: journaled
			// as a person reads it, control bytes written out, never as
			// bytes that could pass for the log's own framing.
			given = Visible(given)
		}
		s, _ := e.redactValue(given).(string)
		return s
	}
	return ""
}

// redactArgs is raw with every string in it redacted as approval
// summaries are, still JSON; arguments that are not JSON are kept as one
// redacted string. <, > and & stay as they are: the journal is read by
// people, and a command's "a > b" must read so.
func (e *Engine) redactArgs(raw json.RawMessage) json.RawMessage {
	var v any
	if err := json.Unmarshal(args(Call{Arguments: raw}), &v); err != nil {
		v = string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e.redactValue(v)); err != nil {
		return json.RawMessage("null")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (e *Engine) redactValue(v any) any {
	switch v := v.(type) {
	case string:
		for _, rule := range e.redact.rules {
			v, _ = rule.apply(v, nil)
		}
		return v
	case []any:
		for i := range v {
			v[i] = e.redactValue(v[i])
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if secretArg(k) {
				x = hidden // {"GITHUB_TOKEN": …}: the name says what the value is, whatever its type
			} else {
				x = e.redactValue(x)
			}
			// A key can hold a secret too ({"sk-…": 1}).
			key, _ := e.redactValue(k).(string)
			for n := 2; ; n++ {
				if _, taken := out[key]; !taken {
					break
				}
				key = fmt.Sprintf("%s#%d", e.redactValue(k), n)
			}
			out[key] = x
		}
		return out
	}
	return v
}

// secretName matches an argument name that names a secret, as the
// key=value rule of the redactor does.
var secretName = regexp.MustCompile(`(?i)(?:api[_-]?key|token|secret|passw(?:or)?d|pwd|credential|private[_-]?key)`)

// secretArg reports whether an argument's name says its value is a
// secret: by the redactor's key=value names, or by the name rules that
// hide a variable from commands (passphrase, jwt, webhook_url, dsn...).
func secretArg(name string) bool {
	_, ok := secrets.Name(name)
	return ok || secretName.MatchString(name)
}

// Abandon records, for a plan that will never run (a batch cancelled
// before it ran), the results its caller gave its calls, and ends the
// batch in the journal, so that it does not stay open for the life of the
// process. Nothing runs.
func (e *Engine) Abandon(ctx context.Context, p *Plan, results []Result) {
	if e.cfg.Journal == nil || !p.journal.begun {
		return
	}
	s := &p.journal
	s.mu.Lock()
	for i, r := range results {
		if i < len(s.ids) && !s.preResolved(i) {
			s.pending.Results = append(s.pending.Results, JournalResult{CallID: s.ids[i], Result: e.finish(r)})
		}
	}
	s.mu.Unlock()
	e.endJournal(ctx, p)
}

package host

import (
	"fmt"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// The types a Host takes and hands out are defined by the packages that
// implement them, under host/internal; these aliases give them names an
// embedder can write. Their fields and methods are documented where they
// are defined (go doc github.com/toolhost/toolhost/host/internal/engine.Plan).

// Config is the policy a Host enforces: the tools mode, the approval rules,
// the sandbox's roots, limits and timeouts, each tool's settings. Start from
// DefaultConfig or LoadConfig and pass it as Options.Config.
type Config = config.Config

// DefaultConfig returns the defaults of the specification, with toolhost's
// choices where it has none: tools run, side effects ask, run_command is
// denied. The caller owns the result and may change it.
func DefaultConfig() *Config { return config.Default() }

// LoadConfig reads an operator's configuration file (TOML or YAML) over
// the defaults, with the checks the command line applies: an unknown key, a
// wrong type or an invalid value is an error naming the key. Relative roots
// in the file resolve against the file's directory. Pass path in
// Options.Protected too, so that no tool can rewrite the policy it runs
// under.
func LoadConfig(path string) (*Config, error) {
	if path == "" {
		return nil, fmt.Errorf("host: LoadConfig needs a file; DefaultConfig gives the defaults")
	}
	l, err := config.Load(config.Options{File: path})
	if err != nil {
		return nil, err
	}
	return l.Config, nil
}

// Batch is the tool calls of one model response, processed together: they
// are planned and approved as one, then run (in parallel when the
// configuration allows).
type Batch = engine.Batch

// Call is one tool call as the model emitted it: its id, the tool's name
// and the arguments' JSON.
type Call = engine.Call

// Plan is a planned batch: what the policy decided for each call, in call
// order, before anything ran. Confirmations lists what must be asked.
type Plan = engine.Plan

// PlannedCall is one call of a Plan with its Disposition; its Confirmation
// is set when it must be asked about, its Result when it was decided
// without running.
type PlannedCall = engine.PlannedCall

// Disposition is what the policy decided for a call.
type Disposition = engine.Disposition

// Dispositions.
const (
	ExecuteNow           = engine.ExecuteNow           // runs without asking
	RequiresConfirmation = engine.RequiresConfirmation // runs once an Approver says yes
	PreResolved          = engine.PreResolved          // decided without running (denied, invalid)
	Pending              = engine.Pending              // parse_only mode: its result comes from a person (Plan.Resolve)
)

// Result is the outcome of one call, what the model is given back: Content
// when OK, Error otherwise. A batch yields exactly one per call, in call
// order.
type Result = engine.Result

// ToolError is the error half of a Result: a Kind the model can branch on
// (abi.ErrorKind) and a message that says what to do.
type ToolError = engine.ToolError

// Confinement is the sandbox one command of a call ran in (Result.Confinement).
type Confinement = engine.Confinement

// Confirmation is what a person is asked to approve for one call: a
// one-line Summary, the risk, why the policy asks, and every argument in
// full (Details renders them; show them all, not only the summary).
type Confirmation = engine.Confirmation

// Argument is one value of a call's arguments as the person approving it
// sees it (Confirmation.Arguments).
type Argument = engine.Argument

// PathInfo is a path as the sandbox resolved it (Argument.Paths).
type PathInfo = engine.PathInfo

// Decision is an answer to a plan's confirmations: which calls may run,
// and who decided. Make one with ApproveAll, ApproveSelected or DenyAll.
type Decision = engine.Decision

// ApproveAll approves every call that asked, on behalf of by.
func ApproveAll(by string) Decision { return engine.ApproveAll(by) }

// ApproveSelected approves the calls with the ids given and denies the
// others that asked, on behalf of by.
func ApproveSelected(by string, ids ...string) Decision {
	return engine.ApproveSelected(by, ids...)
}

// DenyAll denies every call that asked, on behalf of by; their results say
// who denied them.
func DenyAll(by string) Decision { return engine.DenyAll(by) }

// Approver decides a batch's confirmations (BatchOptions.Approver): a
// person at a terminal, a client asked over a protocol, a policy service.
// An error denies every call that asked, and its text says why in their
// results.
type Approver = engine.Approver

// ApproverFunc is a function as an Approver.
type ApproverFunc = engine.ApproverFunc

// Event is one step of a batch as it runs (BatchOptions.Events): the
// batch's state changes and, per call, its start, its output as it comes
// and its end.
type Event = engine.Event

// EventKind names an Event.
type EventKind = engine.EventKind

// Event kinds: the batch's state changes, then per call EventStarted, its
// chunks and EventCompleted.
const (
	EventPlanned          = engine.EventPlanned
	EventAwaitingApproval = engine.EventAwaitingApproval
	EventExecuting        = engine.EventExecuting
	EventDone             = engine.EventDone
	EventStarted          = engine.EventStarted
	EventStdoutChunk      = engine.EventStdoutChunk
	EventStderrChunk      = engine.EventStderrChunk
	EventCompleted        = engine.EventCompleted
)

// EventSink receives a batch's events in order. Send may block, but only
// until its ctx ends: a slow consumer never holds a call past its deadline.
type EventSink = engine.EventSink

// EventSinkFunc is a function as an EventSink.
type EventSinkFunc = engine.EventSinkFunc

// Narrowing restricts the configured policy for one batch (fewer tools,
// approval forced, calls one at a time, nothing written); it can never
// widen it, and its zero value changes nothing. Profile returns the one a
// configured profile stands for.
type Narrowing = engine.Narrowing

// ToolsMode is a Narrowing's tools mode: enabled, parse_only or disabled.
type ToolsMode = engine.ToolsMode

// ApprovalMode is a Narrowing's approval mode: auto, prompt or deny.
type ApprovalMode = engine.ApprovalMode

package hostfn

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// Event is a chunk of streamed output a plugin emitted.
type Event struct {
	CallID string
	Kind   uint32 // abi.EventStdout or abi.EventStderr
	Data   []byte
}

// Env is the state one call's host functions act on, in one part per
// capability. No host function sees it whole: each is written against
// the smallest state it needs (event_emit, fs_stat, fs_list and fs_diff
// against Call; fs_read, fs_read_lines, fs_write and fs_commit against
// Call and Files; proc_run against Call and Commands), and the table in
// link.go hands it those parts. The engine assembles a fresh Env for
// every call, in one place (FR-REG-04a).
type Env struct {
	Call
	Files
	Commands
}

// Call is what every host function of a call may use: who is calling,
// where it may act (its sandbox), the limits on what it may ask, where
// its output and its record go.
type Call struct {
	CallID string
	// Conversation is the call's conversation: the background jobs and
	// kept outputs it starts are that conversation's, and only its calls
	// see them.
	Conversation string
	// Origin names the call's batch: what calls of the same batch read
	// or wrote is the call's own basis. Empty means the call alone
	// (CallID).
	Origin string
	// Sandbox is where the call may act: every path a host function is
	// given, a file's or a command's working directory, is resolved in
	// it, and commands are confined to its roots.
	Sandbox *sandbox.Sandbox
	// Resolved holds paths the engine already resolved during preflight,
	// keyed by the string the plugin was given.
	Resolved map[string]sandbox.Path
	// Readable, when non-nil, is what the call may read (reads.go): the
	// paths its arguments name, or below them for a tool that reads
	// what it finds. Nil lets it read wherever the sandbox allows.
	Readable *ReadScope
	// Limits bound what the plugin may ask of the host functions; they
	// apply whatever the plugin passes (limits.go).
	Limits abi.Limits
	// DryRun makes the call one that checks a change and makes none:
	// fs_write, a committing fs_commit and proc_run are refused, while a
	// dry-run fs_commit is checked as a write would be (the sandbox, the
	// files' freshness) without a write grant, and fs_diff works as ever.
	DryRun bool
	// Emit delivers streamed output; nil drops it. It may block until ctx
	// (the call's) ends, and returns an error when the chunk was not
	// delivered: the call goes on, and never waits past its deadline.
	Emit func(ctx context.Context, ev Event) error
	// Journal records what the call does that outlives it (the files it
	// changes, the processes it starts); nil records nothing.
	Journal CallJournal
	// PreviewJournalBytes is, for a dry run that is not journaled itself
	// (an approval's preview), the journal's MaxPreimageBytes for the call
	// it previews, which will be journaled; 0 when that call will not be.
	// A dry run's description says by it whether undo could restore
	// what the call takes.
	PreviewJournalBytes int64
	// Capabilities are what the plugin's manifest declares. fs_commit,
	// which fs.write and fs.delete both grant, makes only the operations
	// they grant: writing files and making directories for fs.write,
	// removing and moving for fs.delete (ops.go).
	Capabilities []abi.Capability
	// Additive holds the call to only creating (abi.Manifest.Additive):
	// fs_commit refuses it any replacement, removal or move.
	Additive bool
	// Observe, when set, receives every host function the plugin calls,
	// allowed or refused (observe.go); `toolhost test` judges plugins by
	// it.
	Observe Observer
}

// Files is what the fs_* host functions that read for the record or
// write act on besides their Call: what the conversation read
// (stale-file protection), what this call saw, and what approval let
// it write.
type Files struct {
	// Reads is the conversation's read cache. Nil disables recording, so
	// every overwrite of an existing file is refused as stale.
	Reads *readcache.Cache
	// ReadsAt is Reads.Generation() taken when the call's batch was
	// planned (when the call began, for a call without a batch): a file
	// another batch of the conversation changed after that is stale for
	// this call, though its content is recorded as read.
	// Zero skips that check.
	ReadsAt uint64
	// Writes, when non-nil, is every path the call may write, keyed by
	// canonical absolute path (sandbox.Path.Abs): the paths its planned
	// arguments name, with what approval covered. A write to any other
	// path is refused. Nil lets the call write wherever the sandbox
	// allows (a tool whose manifest says it writes unnamed paths, under a
	// policy that asked for that).
	Writes map[string]WriteGrant
	// MaxCommitFiles is the most files one fs_commit may change; 0 means
	// no limit beyond the sandbox's own.
	MaxCommitFiles int
	// Now is the clock for read-cache entries; nil means time.Now.
	Now func() time.Time

	// seen is the digest of each file this call read whole (recorded, or
	// for update) or wrote, by canonical path: the content its changes
	// are based on.
	seen map[string][sha256.Size]byte
}

// Commands is what proc_run acts on besides its Call: how the call's
// commands are confined, their environment, and the confinement each
// one got.
type Commands struct {
	// Confiner confines the commands the call runs; nil means
	// the host has none, and commands do not run.
	Confiner *confine.Confiner
	// Environ is the environment of processes the call starts, already
	// sanitized (CFG-ENV-01); nil starts them with an empty environment.
	Environ []string
	// Jobs runs background commands and keeps commands' whole output;
	// nil refuses background commands and proc_job, and keeps none.
	Jobs *jobs.Manager
	// MaxTimeout bounds the timeout a proc_exec command asks for
	// (abi.ExecRequest.TimeoutMS; [tools.run_command] max_timeout_ms);
	// 0 leaves only the call's deadline.
	MaxTimeout time.Duration
	// NonInteractive (NAME=value entries; [tools.run_command]
	// noninteractive_env) is set in every proc_exec command's environment,
	// over Environ and under the variables the call adds, so that a
	// command does not wait for input that never comes.
	NonInteractive []string
	// EnvRules is the secret filter Environ went through: a proc_exec call
	// may not add a variable it hides by name.
	EnvRules config.Environment

	// mu guards confinement, which a command's host function appends to.
	mu          sync.Mutex
	confinement []confine.Applied
}

// WriteGrant is what approval covered for one path a call may write.
type WriteGrant uint8

const (
	// WriteAny lets the call create or replace the file.
	WriteAny WriteGrant = iota
	// WriteCreateOnly lets the call create the file only: it was approved
	// (or auto-approved) as new, so replacing a file that exists by the
	// time it writes (another call created it) is refused.
	WriteCreateOnly
)

// origin is who the call's records and checks are for.
func (c *Call) origin() string {
	if c.Origin != "" {
		return c.Origin
	}
	return c.CallID
}

func (c *Call) resolve(path string) (sandbox.Path, error) {
	// A path resolved as an entry (a link named itself) is followed
	// here like any other: only fs_lstat and the removals and moves act
	// on the link.
	if p, ok := c.Resolved[path]; ok && !p.Entry() {
		return p, nil
	}
	return c.Sandbox.Resolve(path)
}

// display is how a path appears in results: relative to the working
// directory when inside it, absolute otherwise.
func (c *Call) display(p sandbox.Path) string {
	roots := c.Sandbox.Roots()
	if len(roots) > 0 && p.RootDir == roots[0] {
		return p.Rel
	}
	return p.Abs
}

func (f *Files) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

package inside

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// journalFile is the journal's file in the state directory.
const journalFile = "journal.db"

// OpenJournal opens the configured journal ([journal] path), or
// journal.db in the state directory, and recovers what a crash left open
// (FR-RES-04c). It returns nil without a path and a state directory: such
// a host keeps no journal. An error names the file and what to do.
// host.Open calls it; the commands that only read or recover the history
// call it without loading any plugin.
func OpenJournal(ctx context.Context, c config.Journal, stateDir string, log *slog.Logger) (*journal.Journal, error) {
	path := c.Path
	if path == "" {
		if stateDir == "" {
			return nil, nil
		}
		path = filepath.Join(stateDir, journalFile)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("journal %s is a directory, and toolhost keeps its journal in a file of that name: "+
			"move the directory aside, or set [journal] path to a file", path)
	}
	j, err := journal.Open(ctx, path, journal.Options{
		MaxPreimageBytes: int64(c.MaxPreimageBytes),
		Retention:        time.Duration(c.RetentionDays) * 24 * time.Hour,
	})
	if err != nil {
		return nil, err
	}
	rec, err := j.Recover(ctx, journal.System{})
	logRecovery(log, j.Path(), rec)
	if err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// logRecovery says what recovery did: the batches a crash interrupted,
// their calls, and the process groups it stopped or could not.
func logRecovery(log *slog.Logger, path string, rec *journal.Recovery) {
	if rec == nil {
		return
	}
	for _, b := range rec.Batches {
		log.Warn("a batch was interrupted by a crash; nothing of it is re-run: resume or discard it with toolhost journal recover",
			"journal", path, "batch", b)
	}
	for _, c := range rec.Interrupted {
		log.Warn("a call had started when toolhost stopped; it is not re-run and may have had side effects",
			"batch", c.BatchID, "id", c.CallID)
	}
	for _, c := range rec.NotRun {
		log.Info("a call had not started when toolhost stopped; it was not run", "batch", c.BatchID, "id", c.CallID)
	}
	for _, p := range rec.Killed {
		log.Warn("stopped a process group left running by a crash", "batch", p.BatchID, "id", p.CallID, "pgid", p.PGID)
	}
	for _, p := range rec.Gone {
		log.Info("a process group left by a crash had already ended", "batch", p.BatchID, "id", p.CallID, "pgid", p.PGID)
	}
	for _, err := range rec.KillErrors {
		log.Error("cannot stop a process group left running by a crash", "err", err)
	}
}

// engineJournal is the journal as the engine sees it: the engine's records
// mapped to the journal's, so that the engine knows no SQL.
type engineJournal struct{ j *journal.Journal }

// EngineJournal is j as an engine.Config.Journal: what host.Open wires,
// and what a program that builds an engine itself (the benchmarks) uses.
func EngineJournal(j *journal.Journal) engine.Journal { return engineJournal{j} }

var _ engine.Journal = engineJournal{}

// Record commits s as one journal transaction.
func (a engineJournal) Record(ctx context.Context, batchID string, s engine.JournalStep) error {
	step := journal.Step{End: s.End}
	if b := s.Batch; b != nil {
		jb := journal.Batch{ID: b.ID, Conversation: b.Conversation, Turn: b.Turn, Calls: make([]journal.Call, len(b.Calls))}
		for i, c := range b.Calls {
			jc := journal.Call{ID: c.ID, Tool: c.Tool, Path: c.Path, Arguments: c.Arguments, Disposition: string(c.Disposition)}
			if c.Result != nil {
				r := journalResult(*c.Result)
				jc.Result = &r
			}
			jb.Calls[i] = jc
		}
		step.Batch = &jb
	}
	for _, d := range s.Decisions {
		v := journal.Denied
		if d.Approved {
			v = journal.Approved
		}
		step.Decisions = append(step.Decisions, journal.CallDecision{CallID: d.CallID, Verdict: v, By: d.By})
	}
	for _, r := range s.Results {
		step.Results = append(step.Results, journal.CallResult{CallID: r.CallID, Result: journalResult(r.Result)})
	}
	if s.Start != "" {
		step.Starts = []string{s.Start}
	}
	return a.j.Commit(ctx, batchID, step)
}

// RecordProcess records process group pid of a running call with its
// leader's start time, read now, so that recovery never kills a process
// that reused the pid.
func (a engineJournal) RecordProcess(ctx context.Context, batchID, callID string, pid int) error {
	start, err := journal.ProcessStartTime(pid)
	if err != nil {
		start = 0 // unknown here: recovery then trusts the pid alone
	}
	return a.j.RecordProcess(ctx, journal.Process{BatchID: batchID, CallID: callID, PGID: pid, StartTime: start})
}

// RecordPreimages records what files held before a call changes them,
// in one transaction.
func (a engineJournal) RecordPreimages(ctx context.Context, batchID, callID string, files []engine.JournalFile) error {
	fb := make([]journal.FileBefore, len(files))
	for i, f := range files {
		fb[i] = journal.FileBefore{Path: f.Path, Exists: f.Exists, Mode: f.Mode, Size: f.Size, Content: f.Content}
	}
	_, err := a.j.RecordPreimages(ctx, batchID, callID, fb)
	return err
}

// RecordPostimages records what a call's change left, in one transaction.
func (a engineJournal) RecordPostimages(ctx context.Context, batchID, callID string, files []engine.JournalFile) error {
	fa := make([]journal.FileAfter, len(files))
	for i, f := range files {
		fa[i] = journal.FileAfter{Path: f.Path, Image: journal.Image{Exists: f.Exists, Mode: f.Mode, Size: f.Size, SHA256: f.SHA256}}
	}
	return a.j.RecordPostimages(ctx, batchID, callID, fa)
}

// MaxPreimageBytes is the journal's cap on one pre-image.
func (a engineJournal) MaxPreimageBytes() int64 { return a.j.MaxPreimageBytes() }

func journalResult(r engine.Result) journal.Result {
	out := journal.Result{OK: r.OK, Content: r.Content}
	if r.Error != nil {
		out.ErrorKind, out.ErrorMessage = string(r.Error.Kind), r.Error.Message
	}
	return out
}

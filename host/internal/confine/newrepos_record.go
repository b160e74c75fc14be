package confine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// A toolhost killed during a call (SIGKILL, the OOM killer) never runs
// the call's check: what its command planted in a repository would stay
// for good, since the next call's check looks only at what changed after
// its own start. So Build records what the check needs (when the call
// started, its roots, its writable and hidden mounts, the copies it
// made of hard-linked files) in a small file in the state directory, where no command
// reaches, named after toolhost's pid as the calls' tmps and stages are;
// the check removes it once it has run. A toolhost that finds the record
// of one that is gone claims it (a rename under its own pid) and runs the
// check with the recorded start, after applying the killed call's stages
// (recoverChecks, from Confiner.recoverStages).

// checkRecord is what the check after one call needs.
type checkRecord struct {
	ID            string               `json:"id"`
	Since         int64                `json:"since"`
	Roots         []string             `json:"roots"`
	ExtraWritable []string             `json:"extra_writable,omitempty"`
	Hidden        []string             `json:"hidden,omitempty"`
	Mounts        []Mount              `json:"mounts"`
	Bound         map[string]boundFile `json:"bound,omitempty"`
}

// checkBase is the directory of the records of stateDir's calls.
func checkBase(stateDir string) string {
	return filepath.Join(stateDir, "sandbox", "check")
}

// writeRecord records the check in the state directory (st.record).
func (st *settle) writeRecord() error {
	dir := checkBase(st.s.StateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("record the check after the call in %s, which a toolhost killed during the call leaves to the next: %w", dir, err)
	}
	b, err := json.Marshal(checkRecord{ID: st.c.ID, Since: st.since, Roots: st.c.Roots, ExtraWritable: st.s.ExtraWritable,
		Hidden: st.s.Hidden, Mounts: st.mounts, Bound: st.bound})
	if err != nil {
		return fmt.Errorf("record the check after the call: %w", err)
	}
	// Its name carries the pid before the file is whole: a record found
	// half written is of a toolhost that died in Build, before the
	// command ran, and is dropped.
	f, err := os.CreateTemp(dir, fmt.Sprintf("call-%d-%s-*", os.Getpid(), safeName(st.c.ID)))
	if err != nil {
		return fmt.Errorf("record the check after the call in %s: %w", dir, err)
	}
	_, werr := f.Write(b)
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("record the check after the call in %s: %w", f.Name(), err)
	}
	st.record = f.Name()
	return nil
}

// removeRecord removes the record once the check has run. Left a
// moment longer, off the call's path (an unlink on a busy disk costs a
// call some 0.3 ms), it is harmless: a toolhost killed meanwhile leaves
// the next one a check that finds nothing more to set aside.
func (st *settle) removeRecord() {
	if st != nil && st.record != "" {
		os.Remove(st.record)
		st.record = ""
	}
}

// recoveredCheck is the check of a killed toolhost's call, run by
// another.
type recoveredCheck struct {
	PID   int    // the toolhost that was killed
	Call  string // its call's id
	Found []Neutralized
	Notes []string // what the check could not reach, or why it did not run
}

// recoverChecks runs the check of every call of a toolhost that is gone
// whose record is in stateDir, with s as the settings (the record's
// roots, writable paths and hidden paths in place of s's), and removes
// the records.
func recoverChecks(ctx context.Context, s Settings) []recoveredCheck {
	var out []recoveredCheck
	for _, l := range claimLeftovers(checkBase(s.StateDir)) {
		out = append(out, runRecord(ctx, s, l.pid, l.path))
	}
	return out
}

// runRecord runs the check recorded in the file p, claimed from the
// toolhost pid, and removes the file.
func runRecord(ctx context.Context, s Settings, pid int, p string) recoveredCheck {
	rc := recoveredCheck{PID: pid}
	b, err := os.ReadFile(p)
	var rec checkRecord
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	if err == nil && len(rec.Roots) == 0 {
		err = errors.New("it names no root")
	}
	if err != nil {
		// Half written: its toolhost died in Build, before the command ran.
		os.Remove(p)
		rc.Notes = append(rc.Notes, fmt.Sprintf("the record %s of a call of toolhost %d could not be read (%v); dropped", p, pid, err))
		return rc
	}
	rc.Call = rec.ID
	s.Mode = ModeWorkspaceWrite
	s.ExtraWritable, s.Hidden = rec.ExtraWritable, rec.Hidden
	st := &settle{s: s, c: Call{ID: rec.ID, Roots: rec.Roots}, mounts: rec.Mounts, since: rec.Since, bound: rec.Bound, record: p}
	rc.Found = st.run(ctx)
	st.removeRecord()
	rc.Notes = append(rc.Notes, st.notes()...)
	return rc
}

package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolhost/toolhost/host/internal/journal"
)

// A job outlives a host killed with SIGKILL unless something kills it: a
// confined job's launcher dies with the host (its parent-death signal)
// and takes its PID namespace with it, but an unconfined one (sandbox =
// "off") runs on. So every job's process group is recorded while it
// runs, with its leader's start time (a pid alone may be reused), and
// the next Manager on the same state directory kills the groups of a
// host that is gone, as the journal's recovery does for the commands of
// calls (journal.GroupAlive, journal.KillGroup).

// owner is a toolhost process, named so that a reused pid is not taken
// for it.
type owner struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func self() owner {
	start, _ := journal.ProcessStartTime(os.Getpid())
	return owner{PID: os.Getpid(), Start: start}
}

// alive reports whether o still runs. A start time not known when it was
// recorded cannot tell o from a process that reused its pid: such an
// owner counts as alive, so its jobs are left alone.
func (o owner) alive() bool { return o.PID > 0 && journal.ProcessAlive(o.PID, o.Start) }

// record is one running job's process group.
type record struct {
	PGID       int    `json:"pgid"`
	Start      uint64 `json:"start"`       // the leader's start time, in clock ticks since boot
	RecordedAt int64  `json:"recorded_at"` // Unix nanoseconds
	Owner      owner  `json:"owner"`
}

// writeRecord records job id's process group pgid and returns the
// record's path.
func writeRecord(dir, id string, pgid int, o owner) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("jobs: cannot record the job's process: %w; toolhost records it so that a crash does not leave it running", err)
	}
	// Without a start time (no /proc) the record names no process
	// recovery may kill: a pid alone may be a stranger's by then.
	start, _ := journal.ProcessStartTime(pgid)
	b, _ := json.Marshal(record{PGID: pgid, Start: start, RecordedAt: time.Now().UnixNano(), Owner: o})
	path := filepath.Join(dir, id)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return "", fmt.Errorf("jobs: cannot record the job's process in %s: %w", dir, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("jobs: cannot record the job's process in %s: %w", dir, err)
	}
	return path, nil
}

func removeRecord(path string, log *slog.Logger) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("jobs: cannot remove an ended job's record; the next start checks it and finds it gone", "record", path, "err", err)
	}
}

// recoverRecords kills the recorded jobs of hosts that are gone and
// removes their records. Those of a host still running (another toolhost
// on the same state directory) are its own.
func recoverRecords(dir string, log *slog.Logger) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs: cannot read the job records in %s: %w; background jobs a crash left running could not be found", dir, err)
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".tmp") {
			os.Remove(path) // never renamed: its job was not let run
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			log.Warn("jobs: cannot read a job record", "record", path, "err", err)
			continue
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			log.Warn("jobs: a job record is not one; removed it", "record", path, "err", err)
			os.Remove(path)
			continue
		}
		// A running owner's jobs are its own, this process's included
		// (another host on the same state directory in this process).
		if r.Owner.alive() {
			continue
		}
		// The group existed when it was recorded (the leader's clock
		// reads to 10 ms, hence the slack).
		notAfter := journal.BootTicks(time.Unix(0, r.RecordedAt).Add(50 * time.Millisecond))
		if journal.GroupAlive(r.PGID, r.Start, notAfter) {
			if err := journal.KillGroup(r.PGID); err != nil {
				log.Error("jobs: cannot kill a background job a previous toolhost left running; stop it by hand", "pgid", r.PGID, "err", err, "how", fmt.Sprintf("kill -KILL -- -%d", r.PGID))
				continue
			}
			log.Warn("killed a background job a previous toolhost left running when it was killed", "pgid", r.PGID, "record", path)
		}
		removeRecord(path, log)
	}
	return nil
}

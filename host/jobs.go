package host

import (
	"log/slog"
	"path/filepath"
	"time"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/jobs"
)

// openJobs makes the Manager of run_command's background jobs and kept
// outputs from [tools.jobs]. With a state directory, outputs are kept in
// its outputs/ and running jobs recorded in its jobs/, and the jobs a
// host killed with SIGKILL left running there are killed now, before any
// tool runs; without one, no output is kept.
func openJobs(c config.Jobs, stateDir string, log *slog.Logger) (*jobs.Manager, error) {
	opts := jobs.Options{
		RingBytes:          int(c.RingBytes),
		MaxPerConversation: c.MaxPerConversation,
		MaxTotal:           c.MaxTotal,
		MaxDuration:        time.Duration(c.MaxSeconds) * time.Second,
		SessionEndGrace:    time.Duration(c.SessionEndGraceSeconds) * time.Second,
		KeepOutputBytes:    int64(c.KeepOutputBytes),
		KeepTotalBytes:     int64(c.KeepTotalBytes),
		Logger:             log,
	}
	if stateDir != "" {
		opts.Dir = filepath.Join(stateDir, "outputs")
		opts.RecordDir = filepath.Join(stateDir, "jobs")
	}
	return jobs.New(opts)
}

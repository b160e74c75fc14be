package config

import (
	"fmt"
	"strconv"
)

// Jobs is [tools.jobs]: the background commands run_command starts with
// background: true, and the commands' whole outputs kept for job_output.
// A project file or a profile may only lower these bounds.
type Jobs struct {
	// RingBytes is how much of each job's latest output is held for
	// job_output; older bytes are dropped and job_output says how many.
	RingBytes uint64 `mapstructure:"ring_bytes"`
	// MaxPerConversation and MaxTotal bound the jobs running at once, in
	// one conversation and in the whole host.
	MaxPerConversation int `mapstructure:"max_per_conversation"`
	MaxTotal           int `mapstructure:"max_total"`
	// MaxSeconds kills a job that runs longer; 0 lets it run until its
	// conversation ends or the server stops.
	MaxSeconds int `mapstructure:"max_seconds"`
	// SessionEndGraceSeconds is how long an MCP session's jobs outlive
	// the session.
	SessionEndGraceSeconds int `mapstructure:"session_end_grace_seconds"`
	// KeepOutputBytes caps each command's kept output, KeepTotalBytes all
	// of them (the oldest are removed first).
	KeepOutputBytes uint64 `mapstructure:"keep_output_bytes"`
	KeepTotalBytes  uint64 `mapstructure:"keep_total_bytes"`
}

// Bounds of [tools.jobs].
const (
	// MinJobRingBytes leaves a job's ring room for a page of output.
	MinJobRingBytes = 4 << 10
	// MaxJobRingBytes keeps the rings of max_total jobs in memory.
	MaxJobRingBytes = 64 << 20
)

func defaultJobs() Jobs {
	return Jobs{
		RingBytes: 1 << 20, MaxPerConversation: 8, MaxTotal: 32, MaxSeconds: 3600,
		SessionEndGraceSeconds: 10, KeepOutputBytes: 64 << 20, KeepTotalBytes: 1 << 30,
	}
}

func (j Jobs) validate() error {
	const key = "tools.jobs."
	checks := []struct {
		key string
		err error
	}{
		{"ring_bytes", sizeBetween(j.RingBytes, MinJobRingBytes, MaxJobRingBytes)},
		{"max_per_conversation", positive(j.MaxPerConversation)},
		{"max_total", positive(j.MaxTotal)},
		{"max_seconds", notNegative(j.MaxSeconds, "0 lets a job run until its conversation ends")},
		{"session_end_grace_seconds", notNegative(j.SessionEndGraceSeconds, "0 kills a session's jobs as it ends")},
		{"keep_output_bytes", sizeBetween(j.KeepOutputBytes, 1, j.KeepTotalBytes)},
		{"keep_total_bytes", sizeBetween(j.KeepTotalBytes, 1, 1<<62)},
	}
	for _, c := range checks {
		if c.err != nil {
			return &KeyError{Key: key + c.key, Err: c.err}
		}
	}
	return nil
}

func sizeBetween(n, least, most uint64) error {
	if n < least || n > most {
		return fmt.Errorf("must be between %s and %s, got %s", formatSize(least), formatSize(most), formatSize(n))
	}
	return nil
}

func notNegative(n int, zero string) error {
	if n < 0 {
		return fmt.Errorf("must be 0 or more (%s), got %d", zero, n)
	}
	return nil
}

// jobsNarrowRules narrow [tools.jobs]: a project keeps fewer, shorter
// and smaller jobs, never more.
func jobsNarrowRules() []struct {
	key    string
	narrow func(c, p *Config) string
} {
	j := func(c *Config) *Jobs { return &c.Tools.Jobs }
	size := func(get func(*Jobs) *uint64) func(c, p *Config) string {
		return func(c, p *Config) string { return lowerLimit(get(j(c)), *get(j(p)), false, formatSize) }
	}
	count := func(get func(*Jobs) *int, none bool) func(c, p *Config) string {
		return func(c, p *Config) string { return lowerLimit(get(j(c)), *get(j(p)), none, strconv.Itoa) }
	}
	return []struct {
		key    string
		narrow func(c, p *Config) string
	}{
		{"tools.jobs.ring_bytes", size(func(j *Jobs) *uint64 { return &j.RingBytes })},
		{"tools.jobs.max_per_conversation", count(func(j *Jobs) *int { return &j.MaxPerConversation }, false)},
		{"tools.jobs.max_total", count(func(j *Jobs) *int { return &j.MaxTotal }, false)},
		{"tools.jobs.max_seconds", count(func(j *Jobs) *int { return &j.MaxSeconds }, true)},
		{"tools.jobs.session_end_grace_seconds", count(func(j *Jobs) *int { return &j.SessionEndGraceSeconds }, false)},
		{"tools.jobs.keep_output_bytes", size(func(j *Jobs) *uint64 { return &j.KeepOutputBytes })},
		{"tools.jobs.keep_total_bytes", size(func(j *Jobs) *uint64 { return &j.KeepTotalBytes })},
	}
}

// Package jobs runs the background commands of run_command and keeps
// the whole output of the foreground ones, for the conversation that
// started them: a job's output is read from a byte offset, it can be
// signalled and listed, and it is killed when its conversation ends,
// when the host closes, or, after the host was killed, when the next
// one starts.
package jobs

import (
	"context"
	"errors"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/proc"
)

// ErrUnknown is an id the conversation has no job or kept output by.
var ErrUnknown = errors.New("jobs: no such job or output in this conversation")

// Options configure a Manager.
type Options struct {
	// Dir is where kept outputs are written (the state directory's
	// outputs/); empty keeps none.
	Dir string
}

// Command is a background command to start: its spec (the caller has
// confined it: Spec.Launcher), what to show of it, and Release, called
// once every process of it is gone (the confinement's Close).
type Command struct {
	Spec    proc.Spec
	Cwd     string
	Release func()
}

// Manager runs and follows jobs.
type Manager struct {
	opts Options
}

// New returns a Manager.
func New(opts Options) (*Manager, error) { return &Manager{opts: opts}, nil }

// Start starts cmd as a job of conv and returns its id.
func (m *Manager) Start(ctx context.Context, conv string, cmd Command) (string, error) {
	return "", errors.New("jobs: background commands are not implemented yet")
}

// Do runs one proc_job request of conv.
func (m *Manager) Do(ctx context.Context, conv string, req abi.JobRequest) (abi.JobResult, error) {
	return abi.JobResult{}, errors.New("jobs: not implemented yet")
}

// Keep starts keeping the whole output of a foreground command of conv
// (call callID): the caller writes every chunk to it, in the order the
// command wrote them, and closes it when the command is done. A nil
// Manager, or one without Options.Dir, keeps nothing (nil, nil).
func (m *Manager) Keep(conv, callID, command string) (*Kept, error) { return nil, nil }

// Kept is one foreground command's output being kept.
type Kept struct{ id string }

// ID is the output's id (abi.ExecResult.OutputID).
func (k *Kept) ID() string { return k.id }

// Write keeps p. It never fails the command: past the cap it counts
// and drops.
func (k *Kept) Write(p []byte) (int, error) { return len(p), nil }

// Close ends the output.
func (k *Kept) Close() error { return nil }

// Close kills every job and waits for them to be gone.
func (m *Manager) Close() error { return nil }

package jobs

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/abi"
)

// Kept outputs are files in Options.Dir: OUT-ID holds the bytes, up to
// the per-output cap, and OUT-ID.meta (JSON) whose they are (the
// conversation), what made them, and how many bytes were dropped past the
// cap. Both are 0600 in a 0700 directory of the state directory, which no
// tool can reach. The oldest go first when all of them pass the total cap,
// and the journal's pruning removes those past its retention.

const (
	outPrefix  = "out-"
	metaSuffix = ".meta"
)

// keeper writes and bounds the kept outputs.
type keeper struct {
	dir       string
	perOutput int64
	total     int64
	log       *slog.Logger

	mu   sync.Mutex
	open map[string]bool // outputs being written: never trimmed
	// used is the size of the outputs on disk as last counted, plus what
	// was kept since: the directory is listed only when it passes total.
	used    int64
	counted bool
}

func (k *keeper) init() error {
	k.open = map[string]bool{}
	if k.dir == "" {
		return nil
	}
	if err := os.MkdirAll(k.dir, 0o700); err != nil {
		return fmt.Errorf("jobs: cannot create the directory of kept outputs %s: %w", k.dir, err)
	}
	if err := os.Chmod(k.dir, 0o700); err != nil {
		return fmt.Errorf("jobs: cannot make %s private: %w", k.dir, err)
	}
	k.trim(0)
	return nil
}

// outputMeta is what OUT-ID.meta holds.
type outputMeta struct {
	Conversation string `json:"conversation"`
	CallID       string `json:"call_id"`
	Command      string `json:"command"`
	StartedAt    int64  `json:"started_at"` // Unix milliseconds
	DurationMS   int64  `json:"duration_ms,omitempty"`
	Kept         int64  `json:"kept"`
	Dropped      int64  `json:"dropped,omitempty"`
	Done         bool   `json:"done,omitempty"`
	ExitCode     *int   `json:"exit_code,omitempty"`
	Signal       string `json:"signal,omitempty"`
	Killed       string `json:"killed,omitempty"`
}

// Keep starts keeping the whole output of a foreground command of conv
// (call callID): the caller writes every chunk to it, in the order the
// command wrote them, and closes it when the command is done. A nil
// Manager, or one without Options.Dir, keeps nothing (nil, nil); so does
// a nil *Kept, whose methods do nothing.
func (m *Manager) Keep(conv, callID, command string) (*Kept, error) {
	if m == nil || m.keep.dir == "" {
		return nil, nil
	}
	id := newID(outPrefix)
	path := filepath.Join(m.keep.dir, id)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("jobs: cannot keep the command's output in %s: %w", m.keep.dir, err)
	}
	// The meta file is written when the output ends: until then no one
	// has its id, and one a crash cut short has no owner to read it.
	k := &Kept{id: id, path: path, f: f, keeper: &m.keep, started: time.Now(),
		meta: outputMeta{Conversation: conv, CallID: callID, Command: command, StartedAt: time.Now().UnixMilli()}}
	m.keep.mu.Lock()
	m.keep.open[id] = true
	m.keep.mu.Unlock()
	return k, nil
}

// Kept is one foreground command's output being kept.
type Kept struct {
	id      string
	path    string
	f       *os.File
	keeper  *keeper
	started time.Time

	mu   sync.Mutex
	meta outputMeta
}

// ID is the output's id (abi.ExecResult.OutputID).
func (k *Kept) ID() string {
	if k == nil {
		return ""
	}
	return k.id
}

// Write keeps p. It never fails the command: past the cap, or when the
// disk refuses, it counts and drops.
func (k *Kept) Write(p []byte) (int, error) {
	if k == nil {
		return len(p), nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	room := max(0, k.keeper.perOutput-k.meta.Kept)
	keep := p[:min(int64(len(p)), room)]
	if k.f != nil && len(keep) > 0 {
		n, err := k.f.Write(keep)
		k.meta.Kept += int64(n)
		if err != nil {
			k.keeper.log.Warn("jobs: cannot keep a command's output; the rest is dropped", "output", k.id, "err", err)
			k.f.Close()
			k.f = nil
		}
		k.meta.Dropped += int64(len(p) - n)
		return len(p), nil
	}
	k.meta.Dropped += int64(len(p))
	return len(p), nil
}

// SetExit records how the command ended, for job_output to tell.
func (k *Kept) SetExit(code int, signal, killed string) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.meta.ExitCode, k.meta.Signal, k.meta.Killed = &code, signal, killed
}

// Close ends the output, and removes the oldest outputs if all of them
// now pass the total cap. Closing again does nothing.
func (k *Kept) Close() error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	if k.meta.Done {
		k.mu.Unlock()
		return nil
	}
	var err error
	if k.f != nil {
		err = k.f.Close()
		k.f = nil
	}
	k.meta.Done = true
	k.meta.DurationMS = time.Since(k.started).Milliseconds()
	err = errors.Join(err, k.writeMeta())
	k.mu.Unlock()
	kept := k.meta.Kept
	k.keeper.mu.Lock()
	delete(k.keeper.open, k.id)
	k.keeper.mu.Unlock()
	k.keeper.trim(kept)
	return err
}

// writeMeta writes OUT-ID.meta, once, as the output ends. A crash while
// it is written leaves one that does not decode: the output then has no
// owner, and no conversation reads it. k.mu is held.
func (k *Kept) writeMeta() error {
	b, _ := json.Marshal(k.meta)
	path := k.path + metaSuffix
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("jobs: cannot write %s: %w", path, err)
	}
	return nil
}

// keptOutput is one kept output on disk.
type keptOutput struct {
	id      string
	size    int64
	modTime time.Time
}

// list returns the kept outputs, oldest first.
func (k *keeper) list() ([]keptOutput, error) {
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		return nil, err
	}
	var out []keptOutput
	for _, e := range entries {
		name := e.Name()
		if !validOutputID(name) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, keptOutput{id: name, size: fi.Size(), modTime: fi.ModTime()})
	}
	slices.SortFunc(out, func(a, b keptOutput) int { return a.modTime.Compare(b.modTime) })
	return out, nil
}

// trim counts added more bytes kept and, when all outputs pass the total
// cap, removes the oldest until they fit; one being written is left
// alone.
func (k *keeper) trim(added int64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.used += added
	if k.counted && k.used <= k.total {
		return
	}
	outs, err := k.list()
	if err != nil {
		k.log.Warn("jobs: cannot list the kept outputs to bound them", "dir", k.dir, "err", err)
		return
	}
	var sum int64
	for _, o := range outs {
		sum += o.size
	}
	for _, o := range outs {
		if sum <= k.total {
			break
		}
		if k.open[o.id] {
			continue
		}
		k.remove(o.id)
		sum -= o.size
	}
	k.used, k.counted = sum, true
}

func (k *keeper) remove(id string) {
	for _, p := range []string{filepath.Join(k.dir, id), filepath.Join(k.dir, id+metaSuffix)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			k.log.Warn("jobs: cannot remove a kept output", "path", p, "err", err)
		}
	}
}

// PruneOutputs removes the kept outputs last written before before (the
// journal's retention) and returns how many.
func (m *Manager) PruneOutputs(before time.Time) (int, error) {
	if m == nil || m.keep.dir == "" {
		return 0, nil
	}
	k := &m.keep
	k.mu.Lock()
	defer k.mu.Unlock()
	outs, err := k.list()
	if err != nil {
		return 0, fmt.Errorf("jobs: cannot list the kept outputs in %s: %w", k.dir, err)
	}
	n := 0
	for _, o := range outs {
		if o.modTime.Before(before) && !k.open[o.id] {
			k.remove(o.id)
			k.used -= o.size
			n++
		}
	}
	return n, nil
}

// validOutputID reports whether id is one Keep makes: it is then a plain
// file name, never a path.
func validOutputID(id string) bool {
	rest, ok := strings.CutPrefix(id, outPrefix)
	if !ok || len(rest) != 24 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// readKept reads a kept output of conv as job_output does a job's.
func (m *Manager) readKept(conv string, req abi.JobRequest, max int64) (abi.JobOutput, error) {
	if m.keep.dir == "" || !validOutputID(req.ID) {
		return abi.JobOutput{}, ErrUnknown
	}
	path := filepath.Join(m.keep.dir, req.ID)
	b, err := os.ReadFile(path + metaSuffix)
	if err != nil {
		return abi.JobOutput{}, ErrUnknown
	}
	var meta outputMeta
	if json.Unmarshal(b, &meta) != nil || meta.Conversation != conv {
		return abi.JobOutput{}, ErrUnknown
	}
	f, err := os.Open(path)
	if err != nil {
		return abi.JobOutput{}, ErrUnknown
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return abi.JobOutput{}, fmt.Errorf("jobs: output %s: %w", req.ID, err)
	}
	size := fi.Size()
	key := [2]string{conv, req.ID}
	m.mu.Lock()
	since := m.cursors[key]
	m.mu.Unlock()
	if req.SinceByte != nil {
		since = *req.SinceByte
	}
	since = min(since, size)
	buf := make([]byte, min(max, size-since))
	n, err := f.ReadAt(buf, since)
	if err != nil && !errors.Is(err, io.EOF) {
		return abi.JobOutput{}, fmt.Errorf("jobs: read output %s: %w", req.ID, err)
	}
	end := since + int64(n)
	data, head, tail := utf8Bounds(buf[:n], false, end < size)
	out := abi.JobOutput{
		ID: req.ID, Command: meta.Command, Output: string(data), FromByte: since + int64(head), NextByte: end - int64(tail),
		TotalBytes: size, ExitCode: meta.ExitCode, Signal: meta.Signal, Killed: meta.Killed, DurationMS: meta.DurationMS,
	}
	if out.NextByte >= size && meta.Dropped > 0 {
		// The offsets stay those of the kept bytes; the notice is not
		// one of them.
		out.Output += fmt.Sprintf("\n[toolhost kept only the first %d bytes of this output (tools.jobs.keep_output_bytes); the %d written after them were not kept]\n", size, meta.Dropped)
	}
	m.mu.Lock()
	m.cursors[key] = out.NextByte
	m.mu.Unlock()
	return out, nil
}

// Package jobs runs the background commands of run_command and keeps
// the whole output of the foreground ones, for the conversation that
// started them: a job's output is read from a byte offset, it can be
// signalled and listed, and it is killed when its conversation ends,
// when the host closes, or, after the host was killed, when the next
// one starts.
//
// A job belongs to one conversation: an id of another conversation's
// job or output is answered as one that does not exist (ErrUnknown),
// with the same message, so an id cannot be probed for. Ids are random
// and unguessable.
package jobs

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/proc"
)

// ErrUnknown is an id the conversation has no job or kept output by.
var ErrUnknown = errors.New("jobs: no such job or output in this conversation")

// ErrLimit is a job refused because a bound on running jobs is reached;
// the error wrapping it names the bound and how to make room.
var ErrLimit = errors.New("jobs: too many jobs running")

// ErrClosed is a job refused because the Manager is closing.
var ErrClosed = errors.New("jobs: the host is closing; no new background job starts")

// Defaults of Options; the configuration's defaults are the same
// (tools.jobs).
const (
	DefaultRingBytes          = 1 << 20
	DefaultMaxPerConversation = 8
	DefaultMaxTotal           = 32
	DefaultKeepOutputBytes    = 64 << 20
	DefaultKeepTotalBytes     = 1 << 30
	// MaxFinished is how many ended jobs a conversation keeps for
	// job_list and job_output; the oldest go first.
	MaxFinished = 64
	// MaxFinishedTotal is how many ended jobs the host keeps for all
	// conversations, whose rings stay in memory: conversations that never
	// end (pinned, or named by clients) must not pile them up.
	MaxFinishedTotal = 128
	// MaxWait bounds job_output's wait_ms.
	MaxWait = 30 * time.Second
	// KillGrace is how long a job has after job_kill's TERM, INT or HUP
	// before it is killed.
	KillGrace = 5 * time.Second
	// DefaultReadBytes is what job_output returns when the request gives
	// no max_bytes and the caller no limit.
	DefaultReadBytes = 64 << 10
	// closeWait bounds how long Close waits for the jobs to be gone.
	closeWait = 10 * time.Second
)

// Options configure a Manager.
type Options struct {
	// Dir is where kept outputs are written (the state directory's
	// outputs/); empty keeps none.
	Dir string
	// RecordDir is where each running job's process is recorded (the
	// state directory's jobs/), so that the next Manager on it kills what
	// a host killed with SIGKILL left running; empty records nothing.
	RecordDir string
	// RingBytes is how much of a job's latest output is held for
	// job_output (tools.jobs.ring_bytes); 0 is DefaultRingBytes.
	RingBytes int
	// MaxPerConversation and MaxTotal bound the running jobs of one
	// conversation and of the host; 0 is the default.
	MaxPerConversation int
	MaxTotal           int
	// MaxDuration kills a job that runs longer (killed "timeout"); 0
	// lets a job run until its conversation ends or the host closes.
	MaxDuration time.Duration
	// SessionEndGrace is how long an MCP session's jobs outlive it
	// (SessionEndGrace, EndConversation).
	SessionEndGrace time.Duration
	// KeepOutputBytes caps each kept output, KeepTotalBytes all of them
	// (the oldest are removed first); 0 is the default.
	KeepOutputBytes int64
	KeepTotalBytes  int64
	// Logger receives what cannot be told to a caller; nil discards it.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.RingBytes <= 0 {
		o.RingBytes = DefaultRingBytes
	}
	if o.MaxPerConversation <= 0 {
		o.MaxPerConversation = DefaultMaxPerConversation
	}
	if o.MaxTotal <= 0 {
		o.MaxTotal = DefaultMaxTotal
	}
	if o.KeepOutputBytes <= 0 {
		o.KeepOutputBytes = DefaultKeepOutputBytes
	}
	if o.KeepTotalBytes <= 0 {
		o.KeepTotalBytes = DefaultKeepTotalBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Command is a background command to start: its spec (the caller has
// confined it: Spec.Launcher), what to show of it, and Release, called
// once every process of it is gone (the confinement's Close). Release is
// the job's once Start returns its id; when Start returns an error, the
// caller still owns it and calls it.
//
// Start replaces Spec.Sink (the output goes to the job's ring) and
// Spec.MaxCapture (nothing is captured twice); Spec.Started is called
// as before, then the job's process is recorded.
type Command struct {
	Spec proc.Spec
	// Shown is the command as the model wrote it, for job_list and
	// job_output; empty shows Spec.Command (which the host may have
	// wrapped in its shell's invocation).
	Shown   string
	Cwd     string
	Release func()
}

// Manager runs and follows jobs. It is safe for concurrent use.
type Manager struct {
	opts  Options
	log   *slog.Logger
	owner owner // this process, as the records name it

	mu      sync.Mutex
	closed  bool
	jobs    map[string]*job   // by id
	convs   map[string][]*job // by conversation, oldest first
	running int
	ends    map[*time.Timer]struct{} // EndConversation's pending kills
	// cursors are where each conversation's last job_output of a kept
	// output stopped, by conversation and id.
	cursors map[[2]string]int64

	wg   sync.WaitGroup // the jobs' goroutines
	keep keeper         // kept outputs
}

// New returns a Manager. With a RecordDir it first kills the jobs a
// previous host on the same state directory left running when it was
// killed (its process gone, theirs not), and removes their records.
func New(opts Options) (*Manager, error) {
	opts = opts.withDefaults()
	m := &Manager{
		opts: opts, log: opts.Logger, owner: self(),
		jobs: map[string]*job{}, convs: map[string][]*job{},
		ends: map[*time.Timer]struct{}{}, cursors: map[[2]string]int64{},
	}
	m.keep = keeper{dir: opts.Dir, perOutput: opts.KeepOutputBytes, total: opts.KeepTotalBytes, log: m.log}
	if err := m.keep.init(); err != nil {
		return nil, err
	}
	if opts.RecordDir != "" {
		if err := recoverRecords(opts.RecordDir, m.log); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Options are the options the Manager runs with, defaults filled in.
func (m *Manager) Options() Options { return m.opts }

// SessionEndGrace is how long a session's jobs outlive it
// (Options.SessionEndGrace).
func (m *Manager) SessionEndGrace() time.Duration {
	if m == nil {
		return 0
	}
	return m.opts.SessionEndGrace
}

// job is one background command.
type job struct {
	id, conv, command, cwd string
	started                time.Time
	confined               bool
	cancel                 context.CancelFunc

	mu       sync.Mutex
	ring     ring
	pid      int
	running  bool
	ended    time.Time
	exit     *int
	signal   string
	killed   string
	cursor   int64         // where the conversation's last job_output stopped
	changed  chan struct{} // closed and replaced when output arrives or the job ends
	done     chan struct{} // closed when the job has ended
	grace    *time.Timer   // KILL after a TERM, INT or HUP
	deadline *time.Timer   // Options.MaxDuration
}

// Start starts cmd as a job of conv and returns its id once the command
// runs (its confinement set up); an error says it did not start.
func (m *Manager) Start(ctx context.Context, conv string, cmd Command) (string, error) {
	if m == nil {
		return "", errors.New("jobs: this host runs no background commands")
	}
	j := &job{
		id: newID("job-"), conv: conv, command: cmp.Or(cmd.Shown, cmd.Spec.Command), cwd: cmd.Cwd,
		started: time.Now(), confined: cmd.Spec.Launcher != nil,
		running: true, changed: make(chan struct{}), done: make(chan struct{}),
	}
	j.ring.size = m.opts.RingBytes
	// The job's context is its own, not the call's: the job outlives the
	// call. It exists before the job is admitted, so that Close can stop
	// a job still starting.
	jctx, cancel := context.WithCancel(context.Background())
	j.cancel = cancel
	if err := m.admit(j); err != nil {
		cancel()
		return "", err
	}
	if m.opts.MaxDuration > 0 {
		j.deadline = time.AfterFunc(m.opts.MaxDuration, func() { j.stop(abi.KilledTimeout) })
	}
	running := make(chan struct{})
	var once sync.Once
	ready := func() { once.Do(func() { close(running) }) }

	spec := cmd.Spec
	spec.Sink = j.sink
	spec.MaxCapture, spec.TailCapture = 1, 0
	if spec.Logger == nil {
		spec.Logger = m.log
	}
	var rec string
	started := spec.Started
	spec.Started = func(pid int) error {
		if started != nil {
			if err := started(pid); err != nil {
				return err
			}
		}
		j.mu.Lock()
		j.pid = pid
		j.mu.Unlock()
		if m.opts.RecordDir != "" {
			var err error
			if rec, err = writeRecord(m.opts.RecordDir, j.id, pid, m.owner); err != nil {
				return err
			}
		}
		if !j.confined {
			// Unconfined, the shell runs once it is started.
			ready()
		}
		return nil
	}
	if spec.Launcher != nil {
		rl := readyLauncher{Launcher: spec.Launcher, ready: ready}
		spec.Launcher = rl
		if s, ok := rl.Launcher.(proc.Spawner); ok {
			spec.Launcher = readySpawner{rl, s}
		}
	}
	var runErr error
	rel := &release{fn: cmd.Release}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		res, err := proc.Run(jctx, spec)
		rel.ended()
		if rec != "" {
			removeRecord(rec, m.log)
		}
		runErr = err
		m.finish(j, res, err)
	}()
	select {
	case <-running:
		rel.handOver()
		return j.id, nil
	case <-j.done:
		select {
		case <-running:
			rel.handOver()
			return j.id, nil
		default:
		}
		if runErr != nil {
			m.forget(j)
			var notRun *proc.NotRunError
			if errors.As(runErr, &notRun) {
				return "", runErr
			}
			return "", fmt.Errorf("jobs: the background command did not start: %w", runErr)
		}
		// It ran and ended before it could be seen running: a job all
		// the same, with its output to read.
		rel.handOver()
		return j.id, nil
	case <-ctx.Done():
		j.stop(abi.KilledCancel)
		<-j.done
		m.forget(j)
		return "", fmt.Errorf("jobs: the background command did not start: %w", ctx.Err())
	}
}

// release calls a job's Command.Release once its processes are gone,
// if Start handed it over, that is, returned the job's id: on an error
// the caller still owns it.
type release struct {
	fn     func()
	mu     sync.Mutex
	handed bool
	done   bool
}

func (r *release) handOver() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handed = true
	if r.done && r.fn != nil {
		r.fn()
	}
}

func (r *release) ended() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
	if r.handed && r.fn != nil {
		r.fn()
	}
}

// readyLauncher tells Start when a confined command runs.
type readyLauncher struct {
	proc.Launcher
	ready func()
}

func (l readyLauncher) Started(ctx context.Context, pid int) error {
	err := l.Launcher.Started(ctx, pid)
	if err == nil {
		l.ready()
	}
	return err
}

// readySpawner is a readyLauncher whose launcher may start the process
// itself (a warm launcher): the wrapper must not hide that.
type readySpawner struct {
	readyLauncher
	spawner proc.Spawner
}

func (l readySpawner) Spawn(ctx context.Context, cmd *exec.Cmd) (int, <-chan struct{}, error) {
	return l.spawner.Spawn(ctx, cmd)
}
func (l readySpawner) Kill() { l.spawner.Kill() }

// admit counts j as running, or refuses it naming the bound reached.
func (m *Manager) admit(j *job) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	mine := 0
	for _, o := range m.convs[j.conv] {
		if o.isRunning() {
			mine++
		}
	}
	switch {
	case mine >= m.opts.MaxPerConversation:
		return fmt.Errorf("%w: this conversation already runs %d background jobs, the most it may (tools.jobs.max_per_conversation); job_list shows them, job_kill stops one that is no longer needed", ErrLimit, mine)
	case m.running >= m.opts.MaxTotal:
		return fmt.Errorf("%w: the host already runs %d background jobs, the most it may for all conversations (tools.jobs.max_total); job_list shows this conversation's, job_kill stops one that is no longer needed, or wait for one to end", ErrLimit, m.running)
	}
	m.running++
	m.register(j)
	return nil
}

// register adds j to its conversation, dropping the oldest ended jobs
// past MaxFinished. m.mu is held.
func (m *Manager) register(j *job) {
	m.jobs[j.id] = j
	list := append(m.convs[j.conv], j)
	ended := 0
	for _, o := range list {
		if !o.isRunning() {
			ended++
		}
	}
	for i := 0; ended > MaxFinished && i < len(list); {
		if o := list[i]; !o.isRunning() {
			delete(m.jobs, o.id)
			list = slices.Delete(list, i, i+1)
			ended--
			continue
		}
		i++
	}
	m.convs[j.conv] = list
	m.dropEnded()
}

// dropEnded forgets the jobs that ended first while more than
// MaxFinishedTotal have ended. m.mu is held.
func (m *Manager) dropEnded() {
	var ended []*job
	for _, o := range m.jobs {
		if !o.isRunning() {
			ended = append(ended, o)
		}
	}
	if len(ended) <= MaxFinishedTotal {
		return
	}
	slices.SortFunc(ended, func(a, b *job) int { return a.endedAt().Compare(b.endedAt()) })
	for _, o := range ended[:len(ended)-MaxFinishedTotal] {
		delete(m.jobs, o.id)
		m.convs[o.conv] = slices.DeleteFunc(m.convs[o.conv], func(x *job) bool { return x == o })
		if len(m.convs[o.conv]) == 0 {
			delete(m.convs, o.conv)
		}
	}
}

func (j *job) endedAt() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.ended
}

// forget removes j, a job that did not start.
func (m *Manager) forget(j *job) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.jobs, j.id)
	m.convs[j.conv] = slices.DeleteFunc(m.convs[j.conv], func(o *job) bool { return o == j })
	if len(m.convs[j.conv]) == 0 {
		delete(m.convs, j.conv)
	}
}

// finish records how j ended.
func (m *Manager) finish(j *job, res proc.Result, err error) {
	// The job no longer counts against max_total before anyone waiting
	// on done learns it ended: a job_kill that saw the end must find
	// room for the next job. m.mu is taken before j.mu everywhere.
	m.mu.Lock()
	m.running--
	m.mu.Unlock()

	j.mu.Lock()
	j.running = false
	j.ended = time.Now()
	code := res.ExitCode
	j.exit, j.signal = &code, res.Signal
	var notRun *proc.NotRunError
	switch {
	case errors.As(err, &notRun):
		j.ring.write([]byte("toolhost: the command did not run: " + notRun.Err.Error() + "\n"))
		if j.killed == "" {
			j.exit = nil
		}
	case err != nil && j.killed == "":
		// Ended by its context for a reason stop did not name: the
		// host stopped it.
		j.killed = abi.KilledCancel
	}
	if j.grace != nil {
		j.grace.Stop()
	}
	if j.deadline != nil {
		j.deadline.Stop()
	}
	j.notify()
	close(j.done)
	j.mu.Unlock()
	j.cancel()
}

func (j *job) isRunning() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.running
}

// sink takes the job's output, both streams in the order read.
func (j *job) sink(_ context.Context, _ proc.Stream, chunk []byte) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.ring.write(chunk)
	j.notify()
	return nil
}

// notify wakes whoever waits for the job. j.mu is held.
func (j *job) notify() {
	close(j.changed)
	j.changed = make(chan struct{})
}

// stop kills the job's processes (its context ends), saying why.
func (j *job) stop(why string) {
	j.mu.Lock()
	if j.running && j.killed == "" {
		j.killed = why
	}
	j.mu.Unlock()
	j.cancel()
}

// signals are what job_kill sends.
var signals = map[string]syscall.Signal{
	"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP, "KILL": syscall.SIGKILL,
}

// kill sends sig to j's processes and kills them after KillGrace if
// they are still running.
func (j *job) kill(name string) error {
	sig, ok := signals[name]
	if !ok {
		return fmt.Errorf("signal %q is not one job_kill sends; use TERM (the default), INT, HUP or KILL", name)
	}
	if sig == syscall.SIGKILL {
		j.stop(abi.KilledCancel)
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.running {
		return nil
	}
	if j.killed == "" {
		j.killed = abi.KilledCancel
	}
	// A confined command's pid is its launcher's, which passes the
	// signal on to the shell; an unconfined one's leads the shell's
	// process group, which gets it as a terminal's Ctrl-C would send it.
	target := -j.pid
	if j.confined {
		target = j.pid
	}
	if j.pid > 1 {
		if err := syscall.Kill(target, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("jobs: signal %s to job %s: %w", name, j.id, err)
		}
	}
	if j.grace == nil {
		j.grace = time.AfterFunc(KillGrace, j.cancel)
	}
	return nil
}

// Do runs one proc_job request of conv. The caller bounds req.MaxBytes
// by the call's output limit.
func (m *Manager) Do(ctx context.Context, conv string, req abi.JobRequest) (abi.JobResult, error) {
	if m == nil {
		return abi.JobResult{}, errors.New("jobs: this host runs no background commands")
	}
	switch req.Op {
	case abi.JobListOp:
		return abi.JobResult{Jobs: m.list(conv)}, nil
	case abi.JobOutputOp:
		out, err := m.output(ctx, conv, req)
		if err != nil {
			return abi.JobResult{}, err
		}
		return abi.JobResult{Job: &out}, nil
	case abi.JobKillOp:
		out, err := m.killJob(ctx, conv, req)
		if err != nil {
			return abi.JobResult{}, err
		}
		return abi.JobResult{Job: &out}, nil
	}
	return abi.JobResult{}, fmt.Errorf("jobs: op %q is not one of %q, %q, %q", req.Op, abi.JobOutputOp, abi.JobKillOp, abi.JobListOp)
}

// lookup is conv's job id, or ErrUnknown: another conversation's job is
// as unknown as a missing one.
func (m *Manager) lookup(conv, id string) (*job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok || j.conv != conv {
		return nil, ErrUnknown
	}
	return j, nil
}

func (m *Manager) list(conv string) []abi.JobInfo {
	m.mu.Lock()
	js := slices.Clone(m.convs[conv])
	m.mu.Unlock()
	out := make([]abi.JobInfo, 0, len(js))
	for i := len(js) - 1; i >= 0; i-- {
		j := js[i]
		j.mu.Lock()
		out = append(out, abi.JobInfo{
			ID: j.id, Command: j.command, Cwd: j.cwd, Running: j.running, ExitCode: j.exit, Killed: j.killed,
			StartedAt: j.started.UTC().Format(time.RFC3339), DurationMS: j.durationMS(), TotalBytes: j.ring.total,
		})
		j.mu.Unlock()
	}
	return out
}

// durationMS is how long j ran, or has run so far. j.mu is held.
func (j *job) durationMS() int64 {
	end := j.ended
	if j.running {
		end = time.Now()
	}
	return end.Sub(j.started).Milliseconds()
}

// state is j's state without output. j.mu is held.
func (j *job) state() abi.JobOutput {
	return abi.JobOutput{
		ID: j.id, Command: j.command, TotalBytes: j.ring.total, Running: j.running,
		ExitCode: j.exit, Signal: j.signal, Killed: j.killed, DurationMS: j.durationMS(),
		FromByte: j.cursor, NextByte: j.cursor,
	}
}

func (m *Manager) output(ctx context.Context, conv string, req abi.JobRequest) (abi.JobOutput, error) {
	if req.SinceByte != nil && *req.SinceByte < 0 {
		return abi.JobOutput{}, fmt.Errorf("since_byte %d is negative; give an offset from 0, or leave it out to continue where the last job_output stopped", *req.SinceByte)
	}
	if req.MaxBytes < 0 {
		return abi.JobOutput{}, fmt.Errorf("max_bytes %d is negative; leave it out for the call's output limit", req.MaxBytes)
	}
	if req.WaitMS < 0 {
		return abi.JobOutput{}, fmt.Errorf("wait_ms %d is negative; leave it out not to wait", req.WaitMS)
	}
	max := req.MaxBytes
	if max == 0 {
		max = DefaultReadBytes
	}
	j, err := m.lookup(conv, req.ID)
	if errors.Is(err, ErrUnknown) {
		return m.readKept(conv, req, max)
	}
	if err != nil {
		return abi.JobOutput{}, err
	}
	j.mu.Lock()
	since := j.cursor
	j.mu.Unlock()
	if req.SinceByte != nil {
		since = *req.SinceByte
	}
	if req.WaitMS > 0 {
		wait := min(time.Duration(req.WaitMS)*time.Millisecond, MaxWait)
		timer := time.NewTimer(wait)
		defer timer.Stop()
	waiting:
		for {
			j.mu.Lock()
			more, ch := j.ring.total > since || !j.running, j.changed
			j.mu.Unlock()
			if more {
				break
			}
			select {
			case <-ch:
			case <-timer.C:
				break waiting
			case <-ctx.Done():
				break waiting
			}
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.state()
	data, from := j.ring.read(since, int(min(max, int64(j.ring.size))))
	skipped := from - min(since, j.ring.total)
	if since > j.ring.total {
		from = j.ring.total
		skipped = 0
	}
	end := from + int64(len(data))
	data, head, tail := utf8Bounds(data, skipped > 0, j.running || end < j.ring.total)
	out.Output = string(data)
	out.FromByte = from + int64(head)
	out.NextByte = end - int64(tail)
	out.SkippedBytes = skipped
	j.cursor = out.NextByte
	return out, nil
}

func (m *Manager) killJob(ctx context.Context, conv string, req abi.JobRequest) (abi.JobOutput, error) {
	j, err := m.lookup(conv, req.ID)
	if err != nil {
		return abi.JobOutput{}, err
	}
	name := req.Signal
	if name == "" {
		name = "TERM"
	}
	if err := j.kill(name); err != nil {
		return abi.JobOutput{}, err
	}
	// A killed job usually ends at once: wait a moment, so the answer
	// says how it ended.
	wait := time.Second
	if req.WaitMS > 0 {
		wait = min(time.Duration(req.WaitMS)*time.Millisecond, MaxWait)
	}
	select {
	case <-j.done:
	case <-time.After(wait):
	case <-ctx.Done():
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state(), nil
}

// EndConversation kills conv's jobs after grace and then forgets them,
// with its kept outputs' reading positions: the conversation is over
// (its MCP session ended).
func (m *Manager) EndConversation(conv string, grace time.Duration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(max(grace, 0), func() {
		m.mu.Lock()
		if _, pending := m.ends[t]; !pending {
			m.mu.Unlock()
			return
		}
		delete(m.ends, t)
		js := slices.Clone(m.convs[conv])
		m.mu.Unlock()
		for _, j := range js {
			j.stop(abi.KilledCancel)
		}
		for _, j := range js {
			<-j.done
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, j := range js {
			delete(m.jobs, j.id)
		}
		m.convs[conv] = slices.DeleteFunc(m.convs[conv], func(o *job) bool { return slices.Contains(js, o) })
		if len(m.convs[conv]) == 0 {
			delete(m.convs, conv)
		}
		for k := range m.cursors {
			if k[0] == conv {
				delete(m.cursors, k)
			}
		}
	})
	m.ends[t] = struct{}{}
}

// Close kills every job and waits for them to be gone, for at most
// closeWait; no job starts after it.
func (m *Manager) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	m.closed = true
	for t := range m.ends {
		t.Stop()
	}
	clear(m.ends)
	js := make([]*job, 0, len(m.jobs))
	for _, j := range m.jobs {
		js = append(js, j)
	}
	m.mu.Unlock()
	for _, j := range js {
		j.stop(abi.KilledCancel)
	}
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(closeWait):
		return fmt.Errorf("jobs: background jobs still running %s after they were killed", closeWait)
	}
}

// newID is prefix and 96 random bits: an id no one can guess.
func newID(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

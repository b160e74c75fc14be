// Package proc is the host's command runner: it owns creating the
// process for a run_command call, streaming its output while it runs, and
// killing it (SRD FR-EXE-05/06, FR-OUT-01).
//
// It exists so that the rules about processes live in one place: every
// command runs as sh -c in a session of its own, sees only the stdin it
// is given (none by default) and only the environment it is given (the caller removes secrets from it, with
// config.Environment), and leaves nothing behind. When a
// command finishes or is abandoned, its whole process group is killed,
// background children included, and on Linux every other process of its
// session too: a child that made a group of its own does not escape. One
// that leaves the session (setsid) does, unless a Spec.Launcher confines
// the command (host/internal/confine): then it runs in a PID namespace
// whose init's death kills everything it started. Run's comment says
// exactly what else can escape an unconfined command.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Stream names an output stream. The values match abi.EventStdout and
// abi.EventStderr so callers can convert without a table.
type Stream uint8

// The output streams of a command.
const (
	Stdout Stream = 1
	Stderr Stream = 2
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return fmt.Sprintf("Stream(%d)", uint8(s))
}

// Spec describes one command to run.
type Spec struct {
	// Command is run as: sh -c Command.
	Command string
	// Dir is the absolute working directory, already validated by the caller.
	Dir string
	// Env is the full environment, already sanitized (config.Environment). A nil
	// Env means an empty environment, never the host's unsanitized one. PWD
	// is set to Dir, as a shell started in Dir would expect.
	Env []string
	// MaxCapture is how many bytes of each stream are kept in the Result
	// (<= 0: 1 MiB); the rest is counted, not kept.
	MaxCapture int
	// TailCapture is how many of the last bytes of each stream beyond the
	// first MaxCapture are kept too: the end of a build or test log is
	// where the error is.
	TailCapture int
	// Sink, if non-nil, receives output chunks in the order they were read,
	// from a single goroutine, with Run's ctx. It may block while ctx lives:
	// then the readers wait, which in turn blocks the command on its full
	// pipe, so a slow consumer loses nothing. Once ctx is done it must
	// return promptly; a Sink that does not is abandoned after a short
	// grace, so it can never keep the command or Run alive past ctx. An
	// error says the chunk was not delivered. Chunks may be coalesced. Sink
	// owns each chunk.
	Sink func(ctx context.Context, s Stream, chunk []byte) error
	// Logger receives kill failures and abandoned pipes; nil means
	// slog.Default().
	Logger *slog.Logger
	// Started, if non-nil, is called once the shell has started, before
	// Run waits on it, with its pid, which is also its process group and
	// session id: the caller records it (toolhost's journal, so recovery
	// after a crash can kill what is left). An error stops the command as
	// a cancellation would, and Run returns it.
	Started func(pid int) error
	// Launcher, if non-nil, turns sh -c Command into the process that
	// runs it (the confined launcher of host/internal/confine) and follows
	// that process.
	Launcher Launcher
	// Stdin, if non-nil, is written to the command's standard input from
	// a goroutine, which then closes it; nil gives it /dev/null. A command
	// that does not read it neither hangs nor fails: the write stops when
	// the command's processes are gone, and a broken pipe is no error.
	Stdin []byte
}

// Launcher runs a command through another process, such as one that
// confines it, and follows that process. Run calls Prepare before the
// start, Started once the process runs (after Spec.Started), Exit with
// its exit status, and Close once every process of the command is gone.
type Launcher interface {
	// Prepare rewrites cmd, an exec.Cmd for sh -c Command, before it
	// starts. It must keep Stdout, Stderr and the session of its own.
	Prepare(cmd *exec.Cmd) error
	// Started finishes the setup once the process runs and returns when
	// the command itself runs. An error means it did not and will not:
	// Run kills the process and returns the error.
	Started(ctx context.Context, pid int) error
	// Exit maps the process's exit status to the command's.
	Exit(code int, signal string) (int, string)
	// Close releases what the launch holds.
	Close()
}

// Spawner is a Launcher that may start the command's process itself,
// handing it the pipes Prepare left on cmd: one that already waits,
// started ahead of the call (confine's warm launchers). The process is
// not the host's child, so Run follows it by the channel Spawn returns
// and ends it with Kill; everything the command starts must die with it
// (a PID namespace's init), since Run's kills by process group and
// session do not reach a process it did not start.
type Spawner interface {
	// Spawn starts the process and returns its pid and a channel closed
	// once it has exited. A zero pid and a nil error mean it did not, and
	// Run starts cmd itself; an error means the command did not run.
	// ctx is Run's: it bounds the start.
	Spawn(ctx context.Context, cmd *exec.Cmd) (pid int, exited <-chan struct{}, err error)
	// Kill kills the spawned process, and so all it started.
	Kill()
}

// Result is what a command produced.
type Result struct {
	ExitCode int    // -1 if killed by a signal
	Signal   string // e.g. "killed" when terminated by a signal, else ""

	Stdout, Stderr           []byte // first MaxCapture bytes of each stream
	StdoutTail, StderrTail   []byte // last TailCapture bytes after those
	StdoutBytes, StderrBytes int64  // totals produced
	StdoutLines, StderrLines int64  // newlines among them

	// StdinWritten is how many bytes of Spec.Stdin the command took
	// before it closed its stdin or ended.
	StdinWritten int64

	// Undelivered counts the chunks the Sink did not take: it returned an
	// error, or it was abandoned after ctx ended.
	Undelivered int64
}

const (
	defaultCapture = 1 << 20
	readBufSize    = 32 << 10
	// sinkQueue bounds the chunks waiting for the Sink; when it is full the
	// readers wait rather than drop.
	sinkQueue = 16
	// drainGrace is how long the readers wait in total, once the process
	// command's processes are dead, for a pipe to reach end of file; see
	// reader.run.
	drainGrace = 500 * time.Millisecond
	// sinkGrace is how long after ctx ends the readers keep waiting for a
	// Sink that has not taken their chunks, and Run for the Sink to return.
	sinkGrace = drainGrace
	// drainLimit bounds what is read after the kill. The dead processes can
	// have left at most a pipe's capacity behind (64 KiB by default, 1 MiB
	// at most without privilege), so more than this comes from a process
	// that escaped the kill and is still writing.
	drainLimit = 4 << 20
)

// Run starts sh -c Command in its own session and process group (Setsid),
// with stdin from Spec.Stdin or /dev/null, and stdout and stderr on pipes read by two
// goroutines. It returns once the shell has exited and its output is
// drained. A non-zero exit is not an error; it is in Result.ExitCode.
//
// Commands do not leave processes behind: once the shell exits, or ctx is
// done first, Run kills the whole process group with SIGKILL, so
// background children (sleep 1000 &) die with it and release the pipes.
// On Linux it then kills every process left in the shell's session, and
// the process group of each, in passes until one proves the session empty
// (or, failing a proof, until three passes 10 ms apart find nothing, for
// at most 2 s): children in groups of their own (timeout, set -m,
// Python's process_group=0) die too, and so does a child that keeps
// forking to stay ahead of the kill, if it keeps its process group.
//
// What still escapes a command without a Spec.Launcher (run_command's
// sandbox = "off"; a confined command's PID namespace dies with it): a
// process that calls setsid (setsid(1), a daemon's double
// fork) and so leaves the session; anything outside Linux that leaves the
// process group; a process of the session that toolhost may not signal
// (a setuid program), which is logged; and, with small odds, a process
// that keeps forking and makes a new process group on every fork, which
// dies only if a pass finds one of its processes alive before it forks
// again. Such a process may still hold a pipe open; Run stops waiting for
// it after a short grace, logs it, and returns what was read. A failure
// to kill is logged and never blocks.
//
// When ctx is done before the shell exits, Run returns the partial Result
// and an error wrapping ctx.Err().
func Run(ctx context.Context, spec Spec) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("proc: command not started: %w", err)
	}
	spec = withDefaults(spec)
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	r, err := start(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	defer r.stopGiveUp()
	if spec.Launcher != nil {
		defer spec.Launcher.Close()
	}
	var startedErr, launchErr error
	if spec.Started != nil {
		if startedErr = spec.Started(r.pid); startedErr != nil {
			stop(startedErr)
		}
	}
	if startedErr == nil && spec.Launcher != nil {
		if launchErr = spec.Launcher.Started(ctx, r.pid); launchErr != nil {
			stop(launchErr)
		}
	}
	ctxErr := r.wait(ctx)
	res, err := r.finish()
	if spec.Launcher != nil {
		res.ExitCode, res.Signal = spec.Launcher.Exit(res.ExitCode, res.Signal)
	}
	switch {
	case startedErr != nil:
		return res, fmt.Errorf("proc: command stopped: %w", startedErr)
	case launchErr != nil:
		return res, &NotRunError{Err: launchErr}
	case ctxErr != nil:
		return res, fmt.Errorf("proc: command killed: %w", ctxErr)
	}
	return res, err
}

func withDefaults(spec Spec) Spec {
	if spec.MaxCapture <= 0 {
		spec.MaxCapture = defaultCapture
	}
	if spec.Logger == nil {
		spec.Logger = slog.Default()
	}
	spec.Env = withPWD(spec.Env, spec.Dir)
	return spec
}

// withPWD returns a copy of env whose PWD names dir: the inherited PWD is
// the host's directory, which would mislead the shell and its children.
func withPWD(env []string, dir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if name, _ := splitEnv(kv); name != "PWD" {
			out = append(out, kv)
		}
	}
	if dir != "" {
		out = append(out, "PWD="+dir)
	}
	return out
}

// run is one started command.
type run struct {
	cmd *exec.Cmd
	// spawned is the Spawner that started the process, nil when cmd was
	// started; then pid is its pid.
	spawned Spawner
	pid     int
	log     *slog.Logger
	exited  chan exit     // the shell has exited
	killed  chan struct{} // closed once the processes are killed: readers drain
	out     *reader
	err     *reader
	stdin   *stdinWriter // nil without Spec.Stdin

	readers  sync.WaitGroup
	chunks   chan chunk
	sinkDone chan struct{}
	// giveUp closes sinkGrace after ctx ends: from then on nothing waits
	// for the Sink.
	giveUp      chan struct{}
	stopGiveUp  func() bool
	undelivered atomic.Int64
}

// exit reports that the shell exited; reaped says whether it has already
// been waited for (on platforms without waitid WNOWAIT).
type exit struct {
	reaped bool
	err    error
}

type chunk struct {
	stream Stream
	data   []byte
}

// start creates the pipes, starts the shell and the goroutines that read
// its output and watch for its exit.
func start(ctx context.Context, spec Spec) (*run, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("proc: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, fmt.Errorf("proc: stderr pipe: %w", err)
	}
	var inR, inW *os.File
	if spec.Stdin != nil {
		if inR, inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return nil, fmt.Errorf("proc: stdin pipe: %w", err)
		}
	}
	cmd := exec.Command("/bin/sh", "-c", spec.Command)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdout = outW // *os.File: handed to the child as is, no copying goroutine
	cmd.Stderr = errW
	if inR != nil {
		cmd.Stdin = inR // nil otherwise: the child reads /dev/null
	}
	cmd.SysProcAttr = sysProcAttr()
	if spec.Launcher != nil {
		if err := spec.Launcher.Prepare(cmd); err != nil {
			closeAll(outR, outW, errR, errW, inR, inW)
			return nil, &NotRunError{Err: err}
		}
	}
	r := &run{
		cmd:    cmd,
		log:    spec.Logger,
		exited: make(chan exit, 1),
		killed: make(chan struct{}),
		giveUp: make(chan struct{}),
	}
	err = r.startAndWatch(ctx, spec.Launcher)
	// The child has its own copies of the write ends (and of stdin's read
	// end); ours must go, or the readers would never see end of file and
	// the stdin writer never a broken pipe.
	closeAll(outW, errW, inR)
	if err != nil {
		if spec.Launcher != nil {
			spec.Launcher.Close()
		}
		closeAll(outR, errR, inW)
		return nil, fmt.Errorf("proc: start command in %s: %w", spec.Dir, err)
	}
	if inW != nil {
		r.stdin = startStdin(inW, spec.Stdin)
	}
	r.stopGiveUp = context.AfterFunc(ctx, func() {
		time.AfterFunc(sinkGrace, func() { close(r.giveUp) })
	})
	r.startReaders(ctx, spec, outR, errR)
	return r, nil
}

// startAndWatch starts the command from a goroutine locked to its OS
// thread, which then watches for its exit: a parent-death signal
// (SysProcAttr.Pdeathsig, which the confined launcher uses so that
// toolhost's death kills it) fires when the thread that started the child
// exits, not the process, and a locked thread lives until its goroutine
// unlocks it.
func (r *run) startAndWatch(ctx context.Context, l Launcher) error {
	if s, ok := l.(Spawner); ok {
		pid, exited, err := s.Spawn(ctx, r.cmd)
		if err != nil {
			return &NotRunError{Err: err}
		}
		if pid != 0 {
			r.spawned, r.pid = s, pid
			go func() {
				<-exited
				r.exited <- exit{reaped: true}
			}()
			return nil
		}
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := r.cmd.Start()
		if err == nil {
			r.pid = r.cmd.Process.Pid
		}
		started <- err
		if err == nil {
			r.watch()
		}
	}()
	return <-started
}

// NotRunError is a command that did not run because its launcher could
// not prepare it (confinement that cannot be had fails closed).
type NotRunError struct{ Err error }

func (e *NotRunError) Error() string { return "proc: command not run: " + e.Err.Error() }
func (e *NotRunError) Unwrap() error { return e.Err }

func (r *run) startReaders(ctx context.Context, spec Spec, outR, errR *os.File) {
	if spec.Sink != nil {
		r.chunks = make(chan chunk, sinkQueue)
		r.sinkDone = make(chan struct{})
		go r.deliver(ctx, spec.Sink)
	}
	r.out = r.newReader(Stdout, outR, spec.MaxCapture, spec.TailCapture)
	r.err = r.newReader(Stderr, errR, spec.MaxCapture, spec.TailCapture)
	for _, rd := range []*reader{r.out, r.err} {
		r.readers.Add(1)
		go func() {
			defer r.readers.Done()
			rd.run()
		}()
	}
}

func (r *run) newReader(s Stream, f *os.File, limit, tail int) *reader {
	return &reader{stream: s, f: f, limit: limit, tailLimit: tail, chunks: r.chunks, giveUp: r.giveUp,
		undelivered: &r.undelivered, killed: r.killed, log: r.log}
}

// deliver hands the queued chunks to the Sink, one at a time. Once
// nothing waits for the Sink any more, the rest are counted, not sent.
func (r *run) deliver(ctx context.Context, sink func(context.Context, Stream, []byte) error) {
	defer close(r.sinkDone)
	for c := range r.chunks {
		if isClosed(r.giveUp) {
			r.undelivered.Add(1)
			continue
		}
		if err := sink(ctx, c.stream, c.data); err != nil {
			r.undelivered.Add(1)
		}
	}
}

// watch reports the shell's exit, leaving it unreaped where it can: while
// the shell is a zombie its pid, and so its process group id, cannot be
// reused, so killing the group afterwards cannot hit a stranger.
func (r *run) watch() {
	if err := waitUnreaped(r.cmd.Process.Pid); err != nil {
		r.exited <- exit{reaped: true, err: r.cmd.Wait()}
		return
	}
	r.exited <- exit{}
}

// wait returns once the shell has exited, killing the command first if ctx
// is done before that; then it kills whatever is left of it and reaps the
// shell. It returns ctx's error if ctx ended the command.
func (r *run) wait(ctx context.Context) error {
	var ctxErr error
	var e exit
	select {
	case e = <-r.exited:
	case <-ctx.Done():
		select {
		case e = <-r.exited: // it finished anyway: not a cancellation
		default:
			ctxErr = ctx.Err()
			r.kill()
			e = <-r.exited
		}
	}
	r.kill()
	r.startDrain()
	if !e.reaped {
		e.err = r.cmd.Wait()
	}
	var exitErr *exec.ExitError
	if e.err != nil && !errors.As(e.err, &exitErr) {
		r.log.Warn("proc: waiting for the shell failed", "pid", r.pid, "err", e.err)
	}
	return ctxErr
}

// kill ends the command's processes: its process group with one signal,
// then, where they can be listed, the rest of its session.
// The shell is not reaped yet, so neither id can name a stranger.
func (r *run) kill() {
	if r.spawned != nil {
		r.spawned.Kill()
		return
	}
	killGroup(r.cmd.Process, r.log)
	killSession(r.cmd.Process.Pid, r.log)
}

// startDrain tells the readers the processes are dead and bounds a read that
// is already blocked, so a pipe held open by an escaped process cannot
// keep Run waiting.
func (r *run) startDrain() {
	close(r.killed)
	if r.stdin != nil {
		// The processes are dead, so a write still blocked waits for a
		// process that escaped the kill: stop it.
		r.stdin.stop()
	}
	deadline := time.Now().Add(drainGrace)
	for _, rd := range []*reader{r.out, r.err} {
		rd.f.SetReadDeadline(deadline)
	}
}

// finish waits for the output to be read and delivered, and assembles the
// Result. It waits for the Sink only until the grace after ctx ends: a
// Sink that ignores ctx is left to return on its own.
func (r *run) finish() (Result, error) {
	r.readers.Wait()
	closeAll(r.out.f, r.err.f)
	var abandoned int64
	if r.chunks != nil {
		close(r.chunks)
		select {
		case <-r.sinkDone:
		case <-r.giveUp:
			if !isClosed(r.sinkDone) {
				// The chunk the Sink holds and those still queued.
				abandoned = 1 + int64(len(r.chunks))
				r.log.Warn("proc: the output sink did not return after the command was stopped; abandoned it", "pid", r.pid)
			}
		}
	}
	res := Result{
		Stdout: r.out.keep, StdoutBytes: r.out.total, StdoutTail: r.out.lastBytes(), StdoutLines: r.out.lines,
		Stderr: r.err.keep, StderrBytes: r.err.total, StderrTail: r.err.lastBytes(), StderrLines: r.err.lines,
		Undelivered: r.undelivered.Load() + abandoned,
	}
	if r.stdin != nil {
		res.StdinWritten = r.stdin.wait()
	}
	if r.spawned != nil {
		// Not the host's child: its status is the Launcher's to tell
		// (Launcher.Exit); without it, it was killed.
		res.ExitCode, res.Signal = -1, syscall.SIGKILL.String()
		return res, nil
	}
	ps := r.cmd.ProcessState
	if ps == nil {
		return res, fmt.Errorf("proc: no exit status for pid %d", r.pid)
	}
	res.ExitCode, res.Signal = exitStatus(ps)
	return res, nil
}

func exitStatus(ps *os.ProcessState) (code int, signal string) {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal().String()
	}
	return ps.ExitCode(), ""
}

// reader reads one output stream: it keeps the first limit bytes, counts
// the rest, and forwards everything to the Sink queue when there is one.
type reader struct {
	stream    Stream
	f         *os.File
	limit     int             // bytes to keep
	tailLimit int             // bytes of the end to keep after the first limit
	chunks    chan<- chunk    // nil without a Sink
	giveUp    <-chan struct{} // closed once nothing waits for the Sink
	killed    <-chan struct{} // closed once the command's processes are dead

	undelivered *atomic.Int64
	log         *slog.Logger

	keep  []byte
	tail  []byte // a sliding window: the last tailLimit bytes are at its end
	total int64
	lines int64
}

// run reads until end of file. Once the command is killed, the pipe still
// holds whatever it wrote before dying, and the read end reaches end of
// file as soon as that is consumed. Only a process that escaped the kill
// (outside the session on Linux, the process group elsewhere) can keep the
// pipe open, so then run gives up after drainGrace of waiting in Read, or
// after drainLimit bytes. Time spent blocked on a slow Sink does not count: output the command did write is never cut short.
func (r *reader) run() {
	buf := make([]byte, readBufSize)
	budget, drained := drainGrace, 0
	for {
		draining := isClosed(r.killed)
		if draining {
			if drained > drainLimit {
				r.abandon(errors.New("output continues after the command's processes were killed"))
				return
			}
			r.f.SetReadDeadline(time.Now().Add(budget))
		}
		began := time.Now()
		n, err := r.f.Read(buf)
		if draining {
			budget -= time.Since(began)
			drained += n
		}
		r.take(buf[:n])
		if err == io.EOF {
			return
		}
		if err != nil {
			r.abandon(err)
			return
		}
	}
}

func (r *reader) take(p []byte) {
	if len(p) == 0 {
		return
	}
	r.total += int64(len(p))
	r.lines += int64(bytes.Count(p, []byte{'\n'}))
	r.capture(p)
	if r.chunks != nil {
		r.forward(chunk{r.stream, append([]byte(nil), p...)})
	}
}

// forward queues c for the Sink, waiting for room while the call lives
// (a slow consumer slows the command and loses nothing) but not past the
// grace after ctx ends, so a stuck Sink cannot keep the readers, and so
// Run, waiting.
func (r *reader) forward(c chunk) {
	select {
	case r.chunks <- c:
		return
	default:
	}
	select {
	case r.chunks <- c:
	case <-r.giveUp:
		r.undelivered.Add(1)
	}
}

// capture keeps what fits of p under limit. The buffer doubles up to limit:
// append's gentler growth for large slices made copying the dominant cost
// of reading a megabyte.
func (r *reader) capture(p []byte) {
	head := min(len(p), max(r.limit-len(r.keep), 0))
	r.captureTail(p[head:])
	p = p[:head]
	if need := len(r.keep) + len(p); need > cap(r.keep) {
		grown := make([]byte, len(r.keep), min(r.limit, max(need, 2*cap(r.keep))))
		copy(grown, r.keep)
		r.keep = grown
	}
	r.keep = append(r.keep, p...)
}

// captureTail slides p into the tail window. The window holds up to twice
// tailLimit before sliding, so each byte is copied a bounded number of times.
func (r *reader) captureTail(p []byte) {
	if r.tailLimit <= 0 || len(p) == 0 {
		return
	}
	if len(p) >= r.tailLimit {
		r.tail = append(r.tail[:0], p[len(p)-r.tailLimit:]...)
		return
	}
	if len(r.tail)+len(p) > 2*r.tailLimit {
		keep := r.tailLimit - len(p)
		r.tail = append(r.tail[:0], r.tail[len(r.tail)-keep:]...)
	}
	r.tail = append(r.tail, p...)
}

// lastBytes is the tail window's last tailLimit bytes.
func (r *reader) lastBytes() []byte {
	return r.tail[max(0, len(r.tail)-r.tailLimit):]
}

// abandon logs why the stream was not read to its end: usually a process
// that escaped the kill still holds the pipe.
func (r *reader) abandon(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = errors.New("pipe still open after the command's processes were killed; a process left its session or process group")
	}
	r.log.Warn("proc: stopped reading command output", "stream", r.stream.String(), "err", err)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// stdinWriter feeds Spec.Stdin to the command from a goroutine and
// closes the pipe after it, so that a command reading to end of file
// ends.
type stdinWriter struct {
	f       *os.File
	done    chan struct{}
	written int64
}

func startStdin(f *os.File, data []byte) *stdinWriter {
	w := &stdinWriter{f: f, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		// A command that exits or closes its stdin before reading it all
		// makes Write fail with EPIPE (Go ignores SIGPIPE on pipes other
		// than its own stdout and stderr): the command chose not to read
		// it, which is not an error of the command's.
		n, _ := f.Write(data)
		w.written = int64(n)
		f.Close()
	}()
	return w
}

// stop unblocks a write that waits for a reader that will never read:
// closing a pollable pipe fails a pending Write.
func (w *stdinWriter) stop() {
	select {
	case <-w.done:
	default:
		w.f.Close()
	}
}

// wait returns how many bytes the command took, once the writer is done.
func (w *stdinWriter) wait() int64 {
	<-w.done
	return w.written
}

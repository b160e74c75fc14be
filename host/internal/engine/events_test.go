package engine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
)

// blockedCommand prints a thousand lines after a moment, then sleeps past
// any timeout the tests give it.
const blockedCommand = `sleep 0.2; for i in $(seq 1000); do echo $i; done; sleep 5`

// stopBound is how long a 1 s call may take to end with a consumer that
// does not read: the deadline, killing the command, and the engine's
// bounded waits for the consumer. The command alone runs 5.2 s.
const stopBound = 4 * time.Second

// FR-EXE-03, FR-EXE-04, FR-OUT-01: a consumer of events that stops
// reading — blocked in Send whatever its ctx says, or a subscription no
// one reads — cannot keep a run_command past its 1 s timeout nor a
// cancelled batch running: the call ends on time and the batch returns.
func TestBlockedConsumerCannotHoldACall_FR_EXE_03(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	deaf := EventSinkFunc(func(context.Context, Event) error {
		select { // ignores ctx
		case <-release:
		case <-time.After(time.Minute):
		}
		return nil
	})
	consumers := []struct {
		name string
		sink func() (EventSink, func())
	}{
		{"blocks ignoring ctx", func() (EventSink, func()) { return deaf, func() {} }},
		{"subscription never read", func() (EventSink, func()) {
			sub := Subscribe(4)
			return sub, sub.Finish
		}},
	}
	stops := []struct {
		name string
		kind abi.ErrorKind
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"timeout", abi.KindTimeout, func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
		{"cancel", abi.KindCancelled, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			return ctx, cancel
		}},
	}
	for _, c := range consumers {
		for _, s := range stops {
			t.Run(c.name+"/"+s.name, func(t *testing.T) {
				timeout := time.Second
				if s.kind == abi.KindCancelled {
					timeout = time.Minute // the cancel stops it
				}
				f := blockedFixture(t, timeout)
				sink, finish := c.sink()
				ctx, cancel := s.ctx()
				defer cancel()
				calls := []Call{call("cmd", "run_command", commandArgs(t, blockedCommand, ""))}
				start := time.Now()
				_, results := f.eng.Process(ctx, batch(calls...), answer(ApproveAll("tester")), RunOptions{Events: sink})
				elapsed := time.Since(start)
				finish()
				checkResults(t, calls, results)
				wantError(t, results[0], s.kind, "")
				if elapsed > stopBound {
					t.Errorf("the batch took %v; the consumer held it", elapsed)
				}
				t.Logf("returned after %v", elapsed)
			})
		}
	}
}

// pacedCommand writes its lines apart, so each is a chunk of its own:
// more than the engine queues before its 1 s deadline.
const pacedCommand = `for i in $(seq 400); do echo $i; sleep 0.01; done`

// FR-OUT-01: a consumer that stalls past a call's deadline and then
// catches up learns what it missed: Done, the last event, counts the
// dropped events.
func TestDroppedEventsAreCounted_FR_OUT_01(t *testing.T) {
	f := blockedFixture(t, time.Second)
	var mu sync.Mutex
	var got []Event
	first := true
	sink := EventSinkFunc(func(_ context.Context, ev Event) error {
		mu.Lock()
		stall := first
		first = false
		mu.Unlock()
		if stall {
			time.Sleep(1500 * time.Millisecond) // past the call's 1 s deadline
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
		return nil
	})
	calls := []Call{call("cmd", "run_command", commandArgs(t, pacedCommand, ""))}
	_, results := f.eng.Process(context.Background(), batch(calls...), answer(ApproveAll("tester")), RunOptions{Events: sink})
	checkResults(t, calls, results)
	wantError(t, results[0], abi.KindTimeout, "")
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("no events delivered")
	}
	last := got[len(got)-1]
	if last.Kind != EventDone || last.Dropped == 0 {
		t.Fatalf("last event %+v, want Done counting the dropped events (%d delivered)", last, len(got))
	}
	t.Logf("%d events delivered, %d dropped", len(got), last.Dropped)
}

// The same through a Subscription whose reader stalls, then catches up.
func TestDroppedEventsAreCountedBySubscription_FR_OUT_01(t *testing.T) {
	f := blockedFixture(t, time.Second)
	sub := Subscribe(4)
	var got []Event
	read := make(chan struct{})
	go func() {
		defer close(read)
		time.Sleep(1500 * time.Millisecond) // past the call's 1 s deadline
		for ev := range sub.Events() {
			got = append(got, ev)
		}
	}()
	calls := []Call{call("cmd", "run_command", commandArgs(t, pacedCommand, ""))}
	_, results := f.eng.Process(context.Background(), batch(calls...), answer(ApproveAll("tester")), RunOptions{Events: sub})
	sub.Finish()
	<-read
	checkResults(t, calls, results)
	wantError(t, results[0], abi.KindTimeout, "")
	if len(got) == 0 {
		t.Fatal("no events delivered")
	}
	if last := got[len(got)-1]; last.Kind != EventDone || last.Dropped == 0 {
		t.Fatalf("last event %+v, want Done counting the dropped events (%d delivered)", last, len(got))
	}
}

// A consumer that keeps up sees no count at all.
func TestNoDropsForAConsumerThatKeepsUp(t *testing.T) {
	f := blockedFixture(t, time.Minute)
	var mu sync.Mutex
	var got []Event
	sink := EventSinkFunc(func(_ context.Context, ev Event) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
		return nil
	})
	calls := []Call{call("cmd", "run_command", commandArgs(t, "seq 1 5000", ""))}
	_, results := f.eng.Process(context.Background(), batch(calls...), answer(ApproveAll("tester")), RunOptions{Events: sink})
	checkResults(t, calls, results)
	mu.Lock()
	defer mu.Unlock()
	eventChunks(t, got, calls)
	for _, ev := range got {
		if ev.Dropped != 0 {
			t.Errorf("%s counts %d dropped events", ev.Kind, ev.Dropped)
		}
	}
}

// blockedFixture runs run_command unasked by policy (approved by the
// test) with the given shell timeout.
func blockedFixture(t *testing.T, shell time.Duration) *fixture {
	t.Helper()
	pol := withPolicy(func(p *Policy) { p.Denylist = nil })
	f := configFixture(t, Config{Policy: pol, Timeouts: Timeouts{ShellCommands: shell}})
	// Compile first: the tests time the call, not the compiler.
	tool, _ := f.eng.cfg.Registry.Lookup("run_command")
	if err := tool.Plugin.Compile(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f
}

// A cancelled batch still tells a consumer that honours its context how
// it ended: Done reaches it within the grace, before delivery is
// cancelled (FR-OUT-01).
func TestCancelledBatchStillSendsDone_FR_OUT_01(t *testing.T) {
	f := policyFixture(t, withPolicy(func(p *Policy) { p.Approval = ApprovalAuto }))
	var mu sync.Mutex
	var kinds []EventKind
	sink := EventSinkFunc(func(ctx context.Context, ev Event) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		kinds = append(kinds, ev.Kind)
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	f.eng.Process(ctx, batch(call("s", "spin", `{"spin":true}`)), nil, RunOptions{Events: sink})
	mu.Lock()
	defer mu.Unlock()
	if len(kinds) == 0 || kinds[len(kinds)-1] != EventDone {
		t.Fatalf("events %v, want batch_done last", kinds)
	}
}

// splitEscapesCommand writes terminal escapes and runes cut across
// writes a moment apart, so that each piece is a chunk of its own: an OSC
// 52 clipboard write, clear screen, a CSI by its C1 byte, a window title,
// and runes split mid-sequence, on both streams.
const splitEscapesCommand = `printf 'A\033]52;c;aGk='; sleep 0.1; printf '\aB\033['; sleep 0.1; ` +
	`printf '2JC\342\224'; sleep 0.1; printf '\200D\302'; sleep 0.1; printf '\2332JE\033]0;ti'; sleep 0.1; ` +
	`printf 'tle\aF\342'; printf 'G\033' >&2; sleep 0.1; printf ']0;x\a\342\224' >&2; sleep 0.1; printf '\200' >&2`

// FR-OUT-02: a chunk boundary inside an escape sequence
// or a rune lets no part of it through. Each stream's chunks add up to
// what sanitizing its whole output gives; the stream that ended inside a
// rune gets its U+FFFD, as the whole would, before Completed.
func TestStreamedChunksSanitizedAcrossBoundaries(t *testing.T) {
	f := blockedFixture(t, time.Minute)
	var mu sync.Mutex
	var got []Event
	sink := EventSinkFunc(func(_ context.Context, ev Event) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ev)
		return nil
	})
	calls := []Call{call("cmd", "run_command", commandArgs(t, splitEscapesCommand, ""))}
	_, results := f.eng.Process(context.Background(), batch(calls...), answer(ApproveAll("tester")), RunOptions{Events: sink})
	checkResults(t, calls, results)
	mu.Lock()
	defer mu.Unlock()
	eventChunks(t, got, calls)
	var stdout, stderr strings.Builder
	chunks := 0
	for _, ev := range got {
		switch ev.Kind {
		case EventStdoutChunk:
			stdout.WriteString(ev.Chunk)
			chunks++
		case EventStderrChunk:
			stderr.WriteString(ev.Chunk)
			chunks++
		}
	}
	if want := "ABC\u2500DEF\uFFFD"; stdout.String() != want {
		t.Errorf("stdout chunks add up to %q, want %q", stdout.String(), want)
	}
	if want := "G\u2500"; stderr.String() != want {
		t.Errorf("stderr chunks add up to %q, want %q", stderr.String(), want)
	}
	if chunks < 4 {
		t.Errorf("only %d chunks: the command's writes were not streamed apart, so nothing was split", chunks)
	}
	if !strings.Contains(results[0].Content, "ABC\u2500DEF") {
		t.Errorf("the result is %q, want the whole output sanitized", results[0].Content)
	}
}

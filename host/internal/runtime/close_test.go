package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
)

// blocking is a runtime whose event_emit blocks until the call's state (a
// channel) is closed, and the late module, whose call export calls it:
// a call that stays in flight until the test lets it go.
func blocking(t *testing.T) (*Runtime[chan struct{}], *Plugin[chan struct{}], chan struct{}) {
	t.Helper()
	ctx := context.Background()
	entered := make(chan struct{}, 1)
	rt, err := New(ctx, Config[chan struct{}]{HostFunctions: []HostFunction[chan struct{}]{{
		Name:   abi.FnEventEmit,
		Params: []api.ValueType{i32, i32, i32},
		Func: func(_ context.Context, release *chan struct{}, _ api.Memory, _ []uint64) (abi.Status, []byte) {
			entered <- struct{}{}
			<-*release
			return abi.StatusOK, nil
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	m := handModule{name: "late", yield: true, emit: true, call: callEmit, result: abi.Result{Content: []byte("written")}}
	p, err := rt.Load(ctx, m.write(t))
	if err != nil {
		t.Fatal(err)
	}
	return rt, p, entered
}

// Close is safe while a call is in flight and called
// twice at once: the call finishes with its result, its instance is closed
// rather than pooled, the compiled module goes with the last call, and
// later calls fail with ErrClosed.
func TestPluginCloseWithCallInFlight(t *testing.T) {
	ctx := context.Background()
	_, p, entered := blocking(t)
	if err := p.Warm(ctx, 2); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	type outcome struct {
		res abi.Result
		err error
	}
	done := make(chan outcome)
	go func() {
		res, err := p.Call(ctx, &release, request(`{}`))
		done <- outcome{res, err}
	}()
	<-entered // the call is inside the host function
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := p.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	if n := p.pooled(); n != 0 {
		t.Errorf("%d instances still pooled after Close", n)
	}
	if !p.compiledNow() {
		t.Error("compiled module released while a call still runs")
	}
	close(release)
	select {
	case o := <-done:
		if o.err != nil || string(o.res.Content) != "written" {
			t.Fatalf("call in flight during Close: %+v, %v; want its result", o.res, o.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call in flight did not finish")
	}
	if p.pooled() != 0 || p.compiledNow() {
		t.Errorf("after the last call: %d pooled, compiled %v; want nothing left", p.pooled(), p.compiledNow())
	}
	if _, err := p.Call(ctx, &release, request(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("call after Close: err = %v, want ErrClosed", err)
	}
	if err := p.Compile(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Compile after Close: err = %v, want ErrClosed", err)
	}
}

// Closing the runtime under a call in flight makes the call fail cleanly
// (an error, not a crash), closes every plugin, and refuses new loads.
func TestRuntimeCloseWithCallInFlight(t *testing.T) {
	ctx := context.Background()
	rt, p, entered := blocking(t)
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := p.Call(ctx, &release, request(`{}`))
		done <- err
	}()
	<-entered
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	close(release)
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("call in flight during the runtime's Close: err = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("call in flight did not finish")
	}
	if _, err := p.Call(ctx, &release, request(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("call after the runtime's Close: err = %v, want ErrClosed", err)
	}
	if _, err := rt.Load(ctx, p.Path()); err == nil {
		t.Error("Load after Close succeeded")
	}
}

// pooled returns how many idle instances the plugin holds.
func (p *Plugin[S]) pooled() int {
	return p.idle.Len()
}

// compiledNow reports whether the plugin holds a compiled module.
func (p *Plugin[S]) compiledNow() bool {
	p.compileMu.Lock()
	defer p.compileMu.Unlock()
	return p.compiled != nil
}

// An engine asked for after Close (by a Load or compile still running)
// is refused rather than created and never closed.
func TestCheckedEngineAfterClose(t *testing.T) {
	ctx := context.Background()
	rt, err := New(ctx, Config[testState]{HostFunctions: testHostFunctions()})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close(ctx)
	if eng, err := rt.checkedEngine(ctx); !errors.Is(err, ErrClosed) {
		if eng != nil {
			eng.Close(ctx)
		}
		t.Fatalf("checkedEngine after Close: err = %v, want ErrClosed", err)
	}
}

package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// bareSpin is a module without WASI imports at all, so no sched_yield for
// the loop guard to call, whose call export loops forever.
func bareSpin(describe string) handModule {
	return handModule{name: "bare_spin", call: spinForever, describe: describe}
}

// A module the loop guard cannot make preemptible (no sched_yield import)
// runs on the engine with per-iteration context checks, and its runaway
// call still ends at the deadline (T-TMO-01 for non-Go plugins).
func TestNonYieldingModuleStillStopped_T_TMO_01(t *testing.T) {
	path := bareSpin("").write(t)
	rt := newRuntime(t)
	p, err := rt.Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Manifest().Name != "bare_spin" {
		t.Fatalf("manifest %+v", p.Manifest())
	}
	if err := p.Compile(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		start := time.Now()
		_, err := p.Call(ctx, nil, request(`{}`))
		cancel()
		var ie *InterruptedError
		if !errors.As(err, &ie) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want InterruptedError(DeadlineExceeded)", err)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("stopped after %v", elapsed)
		}
	}
}

// A malformed module (a packed manifest but no describe export) is an error
// naming the missing export, never a crash of the host.
func TestPackedModuleWithoutDescribe(t *testing.T) {
	path := bareSpin("not_describe").write(t)
	p, err := newRuntime(t).Load(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Call(context.Background(), nil, request(`{}`))
	if err == nil || !strings.Contains(err.Error(), "does not export toolhost_describe") {
		t.Fatalf("err = %v", err)
	}
}

package runtime

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
)

// NFR-REL-01 (exactly one result, and the right one): a
// call whose deadline fires after the guest did its work but before the
// host saw it return gets the guest's result, not a timeout, so a model
// does not retry a write that already happened. The instance is not
// pooled, since the interrupt flag may be set.
//
// The module's call export calls event_emit, which cancels the call's
// context, and then returns without running a loop, so the guard never
// sees the flag: deterministically the race a real guest loses when its
// deadline fires between its last loop iteration and its return. The
// module imports sched_yield, so it runs guarded. (On the checked engine
// wazero itself may stop the guest between the host function and its
// return: then no result came back, and the call is rightly reported
// interrupted.)
func TestResultAfterDeadlineIsKept_NFR_REL_01(t *testing.T) {
	m := handModule{name: "late", yield: true, emit: true, call: callEmit, result: abi.Result{Content: []byte("written")}}
	ctx := context.Background()
	rt, err := New(ctx, Config[context.CancelFunc]{HostFunctions: []HostFunction[context.CancelFunc]{{
		Name:   abi.FnEventEmit,
		Params: []api.ValueType{i32, i32, i32},
		Func: func(_ context.Context, cancel *context.CancelFunc, _ api.Memory, _ []uint64) (abi.Status, []byte) {
			(*cancel)()
			return abi.StatusOK, nil
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	p, err := rt.Load(ctx, m.write(t))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		cctx, cancel := context.WithCancel(ctx)
		res, err := p.Call(cctx, &cancel, request(`{}`))
		if err != nil || string(res.Content) != "written" {
			t.Fatalf("call whose deadline fired as it returned: %+v, %v; want its result", res, err)
		}
		if n := p.pooled(); n != 0 {
			t.Fatalf("%d instances pooled after an interrupted call, want 0", n)
		}
	}
}

package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// A result far past the output limit costs the host the read bound, not
// its size, and the instance it inflated is closed instead of kept warm;
// a result within the read bound leaves its instance below the memory
// bound, pooled.
func TestInflatedInstanceIsNotPooled(t *testing.T) {
	rt := newRuntime(t)
	ctx := context.Background()
	big, err := rt.Load(ctx, testplugin.Build(t, t.TempDir(), "host/internal/engine/testdata/liar_big"))
	if err != nil {
		t.Fatal(err)
	}
	limits := abi.Limits{MaxOutputBytes: 100 << 10, AvailableCapacityBytes: 64 << 10}
	res, err := big.Call(ctx, &testState{}, abi.Request{ID: "c1", Args: []byte(`{"bytes":41943040}`), Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	if want := readBound(limits); len(res.Content) != want || strings.Trim(string(res.Content), "x") != "" {
		t.Errorf("a 40 MiB result: the host copied %d bytes of it, want the read bound %d", len(res.Content), want)
	}
	if n := big.idle.Len(); n != 0 {
		t.Errorf("the instance a 40 MiB result inflated was pooled (%d idle)", n)
	}

	res, err = big.Call(ctx, &testState{}, abi.Request{ID: "c2", Args: []byte(`{"bytes":102400}`), Limits: limits})
	if err != nil || len(res.Content) != 102400 {
		t.Fatalf("a 100 KiB result: %v, %d bytes copied", err, len(res.Content))
	}
	inst, ok, _ := big.idle.Get()
	if !ok {
		t.Fatal("the instance of a 100 KiB result was not pooled")
	}
	t.Logf("the warm instance after a 100 KiB result: %d MiB of linear memory (bound %d MiB)", inst.mod.Memory().Size()>>20, DefaultIdleMemoryBytes>>20)
	big.release(inst)
}

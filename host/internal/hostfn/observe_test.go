package hostfn

import (
	"context"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/runtime"
)

// linked returns the host function name as the runtime links it.
func linked(t *testing.T, name string) runtime.HostFunction[Env] {
	t.Helper()
	for _, fn := range Functions() {
		if fn.Name == name {
			return fn
		}
	}
	t.Fatalf("no host function %s", name)
	return runtime.HostFunction[Env]{}
}

// Every host function a plugin calls reaches the call's
// observer with the path as the plugin gave it, allowed or refused, with
// the sandbox's reason for a refusal; one access per file of a commit.
func TestObserveAccesses(t *testing.T) {
	w := newWorkspace(t, map[string]string{"a.txt": "one\n"})
	var got []Access
	env := w.env("call_1")
	env.Observe = func(a Access) { got = append(got, a) }
	g := newGuest(1 << 16)
	call := func(name string, params ...uint64) abi.Status {
		status, _ := linked(t, name).Func(context.Background(), env, g, params)
		return status
	}
	pathArg := func(s string) (uint64, uint64) { return g.put([]byte(s)) }

	p, n := pathArg("a.txt")
	if s := call(abi.FnFSStat, p, n); s != abi.StatusOK {
		t.Fatalf("stat a.txt: status %d", s)
	}
	p, n = pathArg("../outside.txt")
	call(abi.FnFSRead, p, n, 0, 10, 0)
	p, n = pathArg("/etc/passwd")
	call(abi.FnFSRead, p, n, 0, 10, 0)
	r, rn := g.put(abi.AppendCommitRequest(nil, []abi.CommitFile{{Flags: abi.CommitNew, Path: "x.txt", Data: []byte("x")}, {Flags: abi.CommitNew, Path: "y.txt", Data: []byte("y")}}))
	call(abi.FnFSCommit, r, rn, uint64(abi.CommitDryRun))

	want := []struct {
		fn, path, denial string
		ok               bool
	}{
		{abi.FnFSStat, "a.txt", "", true},
		{abi.FnFSRead, "../outside.txt", "Traversal", false},
		{abi.FnFSRead, "/etc/passwd", "AbsolutePath", false},
		{abi.FnFSCommit, "x.txt", "", true},
		{abi.FnFSCommit, "y.txt", "", true},
	}
	if len(got) != len(want) {
		t.Fatalf("observed %+v, want %d accesses", got, len(want))
	}
	for i, w := range want {
		a := got[i]
		if a.CallID != "call_1" || a.Function != w.fn || a.Path != w.path || a.Denial != w.denial || (a.Err == nil) != w.ok || a.Summary {
			t.Errorf("access %d = %+v, want %s %q ok=%v denial %q", i, a, w.fn, w.path, w.ok, w.denial)
		}
	}
}

// What the runtime refuses without a call (during a
// summary) reaches the observer the context carries, marked Summary, with
// the refusal; without an observer nothing happens.
func TestObserveRefused(t *testing.T) {
	g := newGuest(1 << 10)
	p, n := g.put([]byte("secret.txt"))
	fn := linked(t, abi.FnFSRead)
	fn.Refused(context.Background(), true, "while computing an approval summary", g, []uint64{p, n, 0, 0, 0}) // no observer: no panic

	var got []Access
	ctx := WithObserver(context.Background(), func(a Access) { got = append(got, a) })
	fn.Refused(ctx, true, "while computing an approval summary", g, []uint64{p, n, 0, 0, 0})
	if len(got) != 1 || got[0].Function != abi.FnFSRead || got[0].Path != "secret.txt" || !got[0].Summary || got[0].Err == nil {
		t.Fatalf("observed %+v, want one refused summary fs_read of secret.txt", got)
	}
}

// A search names the directory it searches inside its request: the
// observer sees that path, as toolhost test judges a tool by it.
func TestObserveSearchPath(t *testing.T) {
	w := newWorkspace(t, map[string]string{"sub/a.txt": "one\n"})
	var got []Access
	env := w.env("call_1")
	env.Observe = func(a Access) { got = append(got, a) }
	g := newGuest(1 << 16)
	for _, path := range []string{"sub", ""} {
		r, rn := g.put(abi.AppendSearchRequest(nil, abi.SearchRequest{Path: path, Query: "one"}))
		linked(t, abi.FnFSSearch).Func(context.Background(), env, g, []uint64{r, rn, 0})
	}
	if len(got) != 2 || got[0].Function != abi.FnFSSearch || got[0].Path != "sub" || got[1].Path != "" {
		t.Fatalf("observed %+v, want fs_search of sub, then of the root", got)
	}
}

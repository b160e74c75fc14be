package hostfn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// A write waiting for a file another process holds (a second sandbox on
// the same lock directory, as a second toolhost on the same state
// directory) ends at the call's deadline with a Timeout naming the file,
// and writes nothing.
func TestWriteWaitsForAnotherProcessUntilItsDeadline(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	locks := t.TempDir()
	open := func() *sandbox.Sandbox {
		sb, err := sandbox.New(sandbox.Config{Roots: []string{dir}, LockDir: locks})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		return sb
	}
	mine, other := open(), open()
	unlock, err := other.Lock(context.Background(), filepath.Join(dir, "held.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	g := newGuest(1 << 12)
	env := &Env{Call: Call{CallID: "w", Sandbox: mine, Capabilities: []abi.Capability{abi.CapFSWrite}}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	p, n := g.put([]byte("held.txt"))
	d, dn := g.put([]byte("x"))
	_, err = g.call(ctx, env, abi.FnFSWrite, p, n, d, dn, 0)
	he := hostErr(t, err)
	if he.Kind != abi.KindTimeout || !strings.Contains(he.Message, "held.txt") || !strings.Contains(he.Message, "nothing was written") {
		t.Errorf("write of a held file = %s: %s, want a Timeout naming held.txt", he.Kind, he.Message)
	}
	if _, err := os.Stat(filepath.Join(dir, "held.txt")); !os.IsNotExist(err) {
		t.Errorf("held.txt was written: %v", err)
	}
}

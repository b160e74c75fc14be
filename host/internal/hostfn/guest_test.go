package hostfn

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// guest stands for a plugin: a linear memory the test writes arguments
// into, and calls that reach the host functions with pointers and
// lengths on the stack, exactly as a plugin's imports do. A hostile
// plugin is one that passes absurd numbers.
type guest struct {
	api.Memory // only Read and Write are implemented
	mu         sync.Mutex
	mem        []byte
}

func newGuest(size int) *guest { return &guest{mem: make([]byte, 0, size)} }

func (g *guest) Read(off, n uint32) ([]byte, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if uint64(off)+uint64(n) > uint64(len(g.mem)) {
		return nil, false
	}
	return g.mem[off : off+n], true
}

func (g *guest) Write(off uint32, b []byte) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if uint64(off)+uint64(len(b)) > uint64(len(g.mem)) {
		return false
	}
	copy(g.mem[off:], b)
	return true
}

// put copies b into guest memory and returns its pointer and length as
// stack values. The memory never moves: it is allocated at its full size.
func (g *guest) put(b []byte) (ptr, n uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.mem)+len(b) > cap(g.mem) {
		panic("guest memory exhausted; make the guest larger")
	}
	ptr = uint64(len(g.mem))
	g.mem = append(g.mem, b...)
	return ptr, uint64(len(b))
}

// call calls the host function name as the runtime would, through the
// table that hands it its parts of env.
func (g *guest) call(ctx context.Context, env *Env, name string, stack ...uint64) ([]byte, error) {
	return functions()[name].run(ctx, env, g, stack)
}

func (g *guest) read(env *Env, path string, offset, limit int64, flags uint32) (abi.ReadInfo, []byte, error) {
	p, n := g.put([]byte(path))
	resp, err := g.call(context.Background(), env, abi.FnFSRead, p, n, uint64(offset), uint64(limit), uint64(flags))
	if err != nil {
		return abi.ReadInfo{}, nil, err
	}
	return abi.DecodeReadInfo(resp)
}

func (g *guest) write(env *Env, path string, data []byte, flags uint32) (abi.WriteInfo, error) {
	p, n := g.put([]byte(path))
	d, dn := g.put(data)
	resp, err := g.call(context.Background(), env, abi.FnFSWrite, p, n, d, dn, uint64(flags))
	if err != nil {
		return abi.WriteInfo{}, err
	}
	return abi.DecodeWriteInfo(resp)
}

func (g *guest) commit(ctx context.Context, env *Env, files []abi.CommitFile, flags uint32) ([]byte, error) {
	r, n := g.put(abi.AppendCommitRequest(nil, files))
	return g.call(ctx, env, abi.FnFSCommit, r, n, uint64(flags))
}

// workspace is a sandbox over a fresh directory holding files, and the
// read cache of one conversation.
type workspace struct {
	dir   string
	sb    *sandbox.Sandbox
	reads *readcache.Cache
}

func newWorkspace(t testing.TB, files map[string]string) *workspace {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.Config{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return &workspace{dir: dir, sb: sb, reads: readcache.New()}
}

// env is a fresh call of the conversation, as the engine makes one.
func (w *workspace) env(id string) *Env {
	return &Env{Call: Call{CallID: id, Sandbox: w.sb, Capabilities: writerCaps()}, Files: Files{Reads: w.reads, ReadsAt: w.reads.Generation()}}
}

// abs is the canonical path of a workspace file, the key of Files.Writes.
func (w *workspace) abs(name string) string { return filepath.Join(w.dir, filepath.FromSlash(name)) }

// recordRead notes that the conversation read name as it is now.
func (w *workspace) recordRead(t testing.TB, name string) {
	t.Helper()
	b, err := os.ReadFile(w.abs(name))
	if err != nil {
		t.Fatal(err)
	}
	w.reads.Record(w.abs(name), sha256.Sum256(b), time.Now())
}

func (w *workspace) content(name string) string {
	b, err := os.ReadFile(w.abs(name))
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	return string(b)
}

// hostErr returns err as an *Error, or fails the test.
func hostErr(t testing.TB, err error) *Error {
	t.Helper()
	var he *Error
	if !errors.As(err, &he) {
		t.Fatalf("error %v (%T), want a host function *Error", err, err)
	}
	return he
}

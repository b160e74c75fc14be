package hostfn

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// allocated returns the bytes fn allocated on the heap (all goroutines;
// the tests leave a wide margin).
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// bigFile makes a sparse file of size bytes in the workspace and records
// the conversation's read of it.
func bigFile(t *testing.T, w *workspace, name string, size int64) {
	t.Helper()
	f, err := os.Create(w.abs(name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	w.reads.Record(w.abs(name), [sha256.Size]byte(h.Sum(nil)), time.Now())
}

const bigSize = 50 << 20

// FR-LIM-*, NFR-SEC-*: fs_read returns at most the
// call's read limit, whatever limit a plugin passes, and allocates
// accordingly — on a 50 MB file a negative or absurd limit used to cost
// 50 MB (66 MB in base64) of host memory.
func TestLimits_ReadIsClamped(t *testing.T) {
	w := newWorkspace(t, nil)
	bigFile(t, w, "big.bin", bigSize)
	limits := abi.Limits{MaxOutputBytes: 100 << 10, MaxFileReadBytes: 200 << 10, MaxScanBytes: 2 << 20}
	tests := []struct {
		name          string
		offset, limit int64
		flags         uint32
	}{
		{"to the end", 0, -1, 0},
		{"absurd limit", 0, 1 << 62, 0},
		{"most negative", 0, -1 << 63, 0},
		{"from the middle", bigSize / 2, -1, 0},
		{"base64", 0, -1, abi.ReadBase64},
		{"record", 0, -1, abi.ReadRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := w.env("c1")
			env.Limits = limits
			g := newGuest(1 << 10)
			var info abi.ReadInfo
			var data []byte
			var err error
			n := allocated(func() { info, data, err = g.read(env, "big.bin", tt.offset, tt.limit, tt.flags) })
			if err != nil {
				t.Fatal(err)
			}
			raw := int64(len(data))
			if tt.flags&abi.ReadBase64 != 0 {
				dec, err := base64.StdEncoding.DecodeString(string(data))
				if err != nil {
					t.Fatal(err)
				}
				raw = int64(len(dec))
			}
			if raw != env.readLimit() || info.FileSize != bigSize || info.Flags&(abi.ReadEOF|abi.ReadRecorded) != 0 {
				t.Errorf("read %d bytes of %d, flags %b; want the read limit %d, no eof, not recorded", raw, info.FileSize, info.Flags, env.readLimit())
			}
			t.Logf("fs_read of a %d-byte file, limit %d: %d bytes allocated", bigSize, tt.limit, n)
			if n > 4<<20 {
				t.Errorf("fs_read allocated %d bytes, want about the read limit (%d)", n, env.readLimit())
			}
		})
	}
}

// A diff (fs_diff, a commit's dry run) neither reads nor
// diffs a side larger than the scan limit; it says so in one line.
func TestLimits_DiffsAreBounded(t *testing.T) {
	w := newWorkspace(t, map[string]string{"small.txt": "one\n"})
	bigFile(t, w, "big.bin", bigSize)
	w.recordRead(t, "small.txt")
	env := w.env("c1")
	env.Limits = abi.Limits{MaxOutputBytes: 100 << 10, MaxScanBytes: 1 << 20}
	g := newGuest(4 << 20)
	big := make([]byte, 2<<20)
	calls := []struct {
		name string
		do   func() ([]byte, error)
	}{
		{"fs_diff of a big file", func() ([]byte, error) {
			p, n := g.put([]byte("big.bin"))
			d, dn := g.put([]byte("new\n"))
			return g.call(context.Background(), env, abi.FnFSDiff, p, n, d, dn)
		}},
		{"fs_diff to big content", func() ([]byte, error) {
			p, n := g.put([]byte("small.txt"))
			d, dn := g.put(big)
			return g.call(context.Background(), env, abi.FnFSDiff, p, n, d, dn)
		}},
		{"dry run of a big file", func() ([]byte, error) {
			return g.commit(context.Background(), env, []abi.CommitFile{{Path: "big.bin", Data: []byte("new\n")}}, abi.CommitDryRun)
		}},
	}
	for _, c := range calls {
		var resp []byte
		var err error
		n := allocated(func() { resp, err = c.do() })
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !strings.Contains(string(resp), "larger than max_scan_bytes") {
			t.Errorf("%s = %.200q, want a line saying it was not diffed", c.name, resp)
		}
		t.Logf("%s: %d bytes allocated", c.name, n)
		if n > 4<<20 {
			t.Errorf("%s allocated %d bytes, want about the scan limit at most", c.name, n)
		}
	}
}

// A listing page holds at most what the output limit can
// show, whatever max_entries says (0 included), and says it is truncated.
func TestLimits_ListIsCapped(t *testing.T) {
	files := map[string]string{}
	for i := range 500 {
		files[fmt.Sprintf("d/f%03d", i)] = ""
	}
	w := newWorkspace(t, files)
	env := w.env("c1")
	env.Limits = abi.Limits{MaxOutputBytes: 100 * minListEntryBytes}
	g := newGuest(1 << 10)
	for _, maxEntries := range []uint32{0, 1 << 31, 1000, 50} {
		p, n := g.put([]byte("d"))
		resp, err := g.call(context.Background(), env, abi.FnFSList, p, n, 1, uint64(maxEntries), 0)
		if err != nil {
			t.Fatal(err)
		}
		flags, entries, err := abi.DecodeListing(resp)
		want := min(100, int(maxEntries))
		if maxEntries == 0 {
			want = 100
		}
		if err != nil || len(entries) != want || flags&abi.ListTruncated == 0 {
			t.Errorf("max_entries %d: %d entries, flags %b, %v; want %d, truncated", maxEntries, len(entries), flags, err, want)
			continue
		}
		if entries[0].Path != "d/f000" || entries[want-1].Path != fmt.Sprintf("d/f%03d", want-1) {
			t.Errorf("max_entries %d: entries %s..%s, want the first %d in order", maxEntries, entries[0].Path, entries[want-1].Path, want)
		}
	}
}

// Fs_commit bounds its files and the bytes it stages
// before it decodes or writes anything, and event_emit bounds a chunk;
// path arguments are bounded before they are copied.
func TestLimits_Refusals(t *testing.T) {
	w := newWorkspace(t, map[string]string{"a.txt": "A"})
	w.recordRead(t, "a.txt")
	limits := abi.Limits{MaxOutputBytes: 1 << 10, MaxScanBytes: 1000, MaxPatchBytes: 100}
	var emitted int
	calls := []struct {
		name string
		do   func(g *guest, env *Env) error
		msg  string
	}{
		{"a file over max_scan_bytes + max_patch_bytes", func(g *guest, env *Env) error {
			_, err := g.commit(context.Background(), env, []abi.CommitFile{{Path: "a.txt", Data: make([]byte, 1101)}}, 0)
			return err
		}, "more than one file of a commit may have (1100"},
		{"files over the total", func(g *guest, env *Env) error {
			files := make([]abi.CommitFile, 5)
			for i := range files {
				files[i] = abi.CommitFile{Path: fmt.Sprintf("n%d", i), Data: make([]byte, 1000), Flags: abi.CommitNew}
			}
			_, err := g.commit(context.Background(), env, files, 0)
			return err
		}, "more than 4400 bytes in all"},
		{"a file count no request can hold", func(g *guest, env *Env) error {
			r, n := g.put([]byte{0xff, 0xff, 0xff, 0xff})
			_, err := g.call(context.Background(), env, abi.FnFSCommit, r, n, 0)
			return err
		}, "4294967295 files in one commit"},
		{"a request larger than any commit", func(g *guest, env *Env) error {
			r, n := g.put(make([]byte, 40<<20))
			_, err := g.call(context.Background(), env, abi.FnFSCommit, r, n, 0)
			return err
		}, "split the change"},
		{"an event chunk of 1 MiB", func(g *guest, env *Env) error {
			p, n := g.put(make([]byte, 1<<20))
			_, err := g.call(context.Background(), env, abi.FnEventEmit, uint64(abi.EventStdout), p, n)
			return err
		}, "a chunk of 1048576 bytes is more than 65536"},
		{"an event chunk of 4 GiB", func(g *guest, env *Env) error {
			_, err := g.call(context.Background(), env, abi.FnEventEmit, uint64(abi.EventStdout), 0, 1<<32-1)
			return err
		}, "emit output in smaller chunks"},
		{"a path of 4 GiB", func(g *guest, env *Env) error {
			_, err := g.call(context.Background(), env, abi.FnFSStat, 0, 1<<32-1)
			return err
		}, "longer than the 4096 bytes"},
		{"a command of 4 GiB", func(g *guest, env *Env) error {
			_, err := g.call(context.Background(), env, abi.FnProcRun, 0, 1<<32-1, 0, 0, 0)
			return err
		}, "write a script file and run it"},
		{"a command directory of 4 GiB", func(g *guest, env *Env) error {
			c, n := g.put([]byte("true"))
			_, err := g.call(context.Background(), env, abi.FnProcRun, c, n, 0, 1<<32-1, 0)
			return err
		}, "longer than the 4096 bytes"},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			env := w.env("c1")
			env.Limits = limits
			env.Emit = func(context.Context, Event) error { emitted++; return nil }
			g := newGuest(48 << 20)
			err := c.do(g, env)
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %q", err, c.msg)
			}
		})
	}
	if emitted != 0 || w.content("a.txt") != "A" || w.content("n0") != "<absent>" {
		t.Errorf("a refused call had an effect: %d events, a.txt %q, n0 %q", emitted, w.content("a.txt"), w.content("n0"))
	}
}

// diff calls fs_diff of name to data.
func (g *guest) diff(ctx context.Context, env *Env, name string, data []byte) (string, error) {
	p, n := g.put([]byte(name))
	d, dn := g.put(data)
	resp, err := g.call(ctx, env, abi.FnFSDiff, p, n, d, dn)
	return string(resp), err
}

// A diff reads what read_file would, a regular file: a
// FIFO (no writer, so a read would wait or see nothing) or a device
// (/dev/zero never ends) is not read, and the diff says why in its
// one line; a directory is refused. Each returns at once.
func TestLimits_DiffsReadOnlyRegularFiles(t *testing.T) {
	w := newWorkspace(t, map[string]string{"dir/f": "x"})
	if err := unix.Mkfifo(w.abs("fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, err := sandbox.New(sandbox.Config{Roots: []string{"/dev"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	devEnv := &Env{Call: Call{CallID: "c2", Sandbox: dev, Capabilities: writerCaps()}}
	tests := []struct {
		name, path string
		env        *Env
		want       string // in the diff; empty: want an error
	}{
		{"fifo", "fifo", w.env("c1"), "diff omitted: a/fifo is a named pipe (FIFO), not a regular file"},
		{"/dev/zero", "zero", devEnv, "diff omitted: a/zero is a character device, not a regular file"},
		{"directory", "dir", w.env("c1"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuest(1 << 10)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			var d string
			var err error
			n := allocated(func() { d, err = g.diff(ctx, tt.env, tt.path, []byte("new\n")) })
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("took %v", elapsed)
			}
			if n > 1<<20 {
				t.Errorf("allocated %d bytes: the file was read", n)
			}
			if tt.want == "" {
				if he := hostErr(t, err); he.Status != abi.StatusWrongType || !strings.Contains(he.Message, "dir is a directory") {
					t.Errorf("error %+v, want a directory refused by name", he)
				}
				return
			}
			if err != nil || !strings.Contains(d, tt.want) {
				t.Errorf("diff = %q, %v; want a line with %q", d, err, tt.want)
			}
		})
	}
}

// The diff algorithm's cost grows with lines, and it
// cannot be interrupted: sides of too many lines are not diffed, and a
// diff still running at the call's deadline is left behind, the call
// ending on time.
func TestLimits_DiffsAreBoundedInTime(t *testing.T) {
	lines := func(n int, line func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(line(i))
		}
		return b.String()
	}
	many := lines(maxDiffLines+1, func(int) string { return "1\n" })
	heavy := lines(maxDiffLines/2, func(i int) string { return strconv.Itoa(i%7) + "\n" })
	w := newWorkspace(t, map[string]string{"many.txt": many, "heavy.txt": heavy})
	env := w.env("c1")
	g := newGuest(4 << 20)

	start := time.Now()
	d, err := g.diff(context.Background(), env, "many.txt", []byte(strings.ReplaceAll(many, "1", "2")))
	if err != nil || !strings.Contains(d, "diff omitted: a/many.txt has 262145 lines") {
		t.Errorf("diff = %.200q, %v; want a line saying it has too many lines", d, err)
	}
	t.Logf("too many lines: %v", time.Since(start))

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	reversed := lines(maxDiffLines/2, func(i int) string { return strconv.Itoa((maxDiffLines/2-i)%5) + "\n" })
	d, err = g.diff(ctx, env, "heavy.txt", []byte(reversed))
	elapsed := time.Since(start)
	if err == nil {
		t.Skipf("the diff finished within 50 ms (%v, %d bytes); nothing to interrupt on this machine", elapsed, len(d))
	}
	if he := hostErr(t, err); he.Kind != abi.KindTimeout || !strings.Contains(he.Message, "heavy.txt: the diff was not done before the call's deadline") {
		t.Errorf("error %+v, want a timeout naming the file", he)
	}
	if elapsed > time.Second {
		t.Errorf("returned after %v, want about the 50 ms deadline", elapsed)
	}
}

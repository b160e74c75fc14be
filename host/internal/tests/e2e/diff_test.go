package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dryRunArgs are write_file's arguments for a dry run writing "new\n".
func dryRunArgs(t *testing.T, path string) string {
	t.Helper()
	return jsonArgs(t, map[string]any{"path": path, "content": "new\n", "dry_run": true})
}

// Write_file's dry run diffs the target as read_file
// would read it: a 150 MB file (it took 16.6 s and 1.78 GB against a 2 s
// timeout) is not read, and a FIFO is not opened for a read that waits or
// sees nothing; the result says the diff was omitted and why, promptly,
// and the host stays small.
func TestWriteFileDryRun_BoundedDiffs(t *testing.T) {
	o := newWorkspace(t).withConfig(t, "")
	f, err := os.Create(o.dir + "/big.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(150 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := syscall.Mkfifo(o.dir+"/fifo", 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{"big.txt", "diff omitted: a/big.txt is larger than max_scan_bytes (2097152 bytes)"},
		{"fifo", "diff omitted: a/fifo is a named pipe (FIFO), not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r, x := measure(t, o, time.Minute, "write_file", dryRunArgs(t, tt.path), "--allow", "write_file")
			t.Logf("%v, peak RSS %d MB", x.elapsed, x.maxRSS>>20)
			if !r.OK || !strings.Contains(r.Content, tt.want) {
				t.Fatalf("result %+v, want the dry run to say %q\nstderr: %s", r, tt.want, x.stderr)
			}
			if x.maxRSS > 300<<20 {
				t.Errorf("the host's peak RSS was %d MB: the file was read", x.maxRSS>>20)
			}
			// The call's own timeout is 2 s; starting the host and
			// compiling the plugin take the rest.
			if x.elapsed > 20*time.Second {
				t.Errorf("took %v", x.elapsed)
			}
		})
	}
}

// With the whole filesystem as its root, a dry run of
// /dev/zero (which killed the host with "out of memory") is not read: the
// diff is omitted, at once, and memory stays small.
func TestWriteFileDryRun_DevZero(t *testing.T) {
	o := newWorkspace(t).withConfig(t, "[tools.sandbox]\nallow_absolute = true\n")
	r, x := measure(t, o, time.Minute, "write_file", dryRunArgs(t, "/dev/zero"), "--allow", "write_file", "--root", "/")
	t.Logf("%v, peak RSS %d MB", x.elapsed, x.maxRSS>>20)
	const want = "diff omitted: a/dev/zero is a character device, not a regular file"
	if !r.OK || !strings.Contains(r.Content, want) {
		t.Fatalf("result %+v, want the dry run to say %q\nstderr: %s", r, want, x.stderr)
	}
	if x.maxRSS > 300<<20 {
		t.Errorf("the host's peak RSS was %d MB", x.maxRSS>>20)
	}
}

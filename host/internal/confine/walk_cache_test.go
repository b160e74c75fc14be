package confine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

var fullLimits = searchLimits{walkMaxDepth, walkMaxEntries}

// cacheTree makes a tree for the cache's tests: a repository with a few
// levels of directories, a project file and a nested repository.
func cacheTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	gitInitAt(t, root)
	for _, d := range []string{"a/b/c/d", "a/b2", "src/pkg/x", "docs"} {
		mustMkdir(t, filepath.Join(root, d))
	}
	mustWrite(t, filepath.Join(root, "toolhost.toml"), "")
	gitInitAt(t, filepath.Join(root, "vendor/lib"))
	return root
}

// sameFound fails unless the cached search found what a full search
// finds.
func sameFound(t *testing.T, what string, got, full found) {
	t.Helper()
	got.read, full.read = 0, 0
	if !reflect.DeepEqual(got, full) {
		t.Errorf("%s: the cached search found\n%+v\nwant what a full search finds\n%+v", what, got, full)
	}
}

// TestSearchCacheSeesChanges: after a search with a cache, a command
// changes the tree the way one would to plant hooks or configuration
// where the next call's Build would not look; the next search finds
// exactly what a full search finds, reading only the directories that
// changed (the search runs for every call, and its cache must not be fooled). The cache's clock is a minute ahead, so that
// every directory of the tree just made is remembered.
func TestSearchCacheSeesChanges(t *testing.T) {
	tests := []struct {
		name     string
		change   func(t *testing.T, root, outside string)
		find     string // a path the search must find, relative to root; "" for none
		maxReads int    // directories the second search may read
	}{
		{"nothing", func(*testing.T, string, string) {}, "", 0},
		{"a nested .git made deep", func(t *testing.T, root, _ string) {
			mustMkdir(t, filepath.Join(root, "a/b/c/d/.git/hooks"))
		}, "a/b/c/d/.git", 1},
		{"a project file made, its directory's modification time set back", func(t *testing.T, root, _ string) {
			mustWrite(t, filepath.Join(root, "a/b/toolhost.yaml"), "")
			runTool(t, "touch", "-d", "2000-01-01", filepath.Join(root, "a/b"))
		}, "a/b/toolhost.yaml", 1},
		{"a project file renamed in", func(t *testing.T, root, outside string) {
			mustWrite(t, filepath.Join(outside, "x"), "")
			if err := os.Rename(filepath.Join(outside, "x"), filepath.Join(root, "src/pkg/x/toolhost.yml")); err != nil {
				t.Fatal(err)
			}
		}, "src/pkg/x/toolhost.yml", 1},
		{"a project file hard-linked in", func(t *testing.T, root, outside string) {
			mustWrite(t, filepath.Join(outside, "y"), "")
			if err := os.Link(filepath.Join(outside, "y"), filepath.Join(root, "docs/toolhost.toml")); err != nil {
				t.Fatal(err)
			}
		}, "docs/toolhost.toml", 1},
		{"a directory replaced by another holding a repository", func(t *testing.T, root, outside string) {
			gitInitAt(t, filepath.Join(outside, "b"))
			if err := os.Rename(filepath.Join(root, "a/b"), filepath.Join(outside, "old-b")); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(outside, "b"), filepath.Join(root, "a/b")); err != nil {
				t.Fatal(err)
			}
		}, "a/b/.git", 2},
		{"a directory replaced by a link to a repository", func(t *testing.T, root, outside string) {
			gitInitAt(t, filepath.Join(outside, "repo"))
			if err := os.RemoveAll(filepath.Join(root, "a/b2")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(outside, "repo"), filepath.Join(root, "a/b2")); err != nil {
				t.Fatal(err)
			}
		}, "", 1},
		{"a bare repository made", func(t *testing.T, root, _ string) {
			gitInitBare(t, filepath.Join(root, "src/origin.git"))
		}, "src/origin.git", 12}, // src and the new repository's directories
		{"a directory removed", func(t *testing.T, root, _ string) {
			if err := os.RemoveAll(filepath.Join(root, "a/b/c")); err != nil {
				t.Fatal(err)
			}
		}, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, outside := cacheTree(t), t.TempDir()
			c := NewSearchCache()
			first := find(root, nil, fullLimits, c, time.Minute)
			sameFound(t, "before the change", first, find(root, nil, fullLimits, nil, 0))

			tt.change(t, root, outside)
			got := find(root, nil, fullLimits, c, time.Minute)
			sameFound(t, "after the change", got, find(root, nil, fullLimits, nil, 0))
			if got.read > tt.maxReads {
				t.Errorf("the search read %d directories, want at most %d: the others did not change", got.read, tt.maxReads)
			}
			if tt.find != "" {
				want := filepath.Join(root, tt.find)
				if !slices.Contains(slices.Concat(got.dotgits, got.gitdirs, got.projects), want) {
					t.Errorf("%s not found: %+v", want, got)
				}
			}
			for dir := range cached(c, root) {
				if _, err := os.Lstat(dir); err != nil {
					t.Errorf("the cache keeps %s, which is gone", dir)
				}
			}
		})
	}
}

// TestSearchCacheForgetsRecentChanges: change times are coarse (a tick,
// or a second on some filesystems), so a directory that changed shortly
// before the search that read it could change again without its ctime
// moving; such directories are not remembered and the next search reads
// them again.
func TestSearchCacheForgetsRecentChanges(t *testing.T) {
	root := cacheTree(t)
	c := NewSearchCache()
	first := find(root, nil, fullLimits, c, 0)
	if n := len(cached(c, root)); n != 0 {
		t.Errorf("the cache kept %d directories made a moment ago, want none", n)
	}
	if again := find(root, nil, fullLimits, c, 0); again.read != first.read {
		t.Errorf("the second search read %d directories, want all %d again", again.read, first.read)
	}
	// Seen from later, the same directories are old enough to keep.
	later := ctimeSlack + time.Second
	find(root, nil, fullLimits, c, later)
	if n := len(cached(c, root)); n != first.read {
		t.Errorf("the cache kept %d directories, want %d", n, first.read)
	}
	if again := find(root, nil, fullLimits, c, later); again.read != 0 {
		t.Errorf("a search of an unchanged tree read %d directories, want none", again.read)
	}
}

// TestSearchCacheConcurrent: calls share one cache; searches running while
// a command makes repositories never leave the cache in a state that
// hides one from a later search. Run with -race.
func TestSearchCacheConcurrent(t *testing.T) {
	root := cacheTree(t)
	c := NewSearchCache()
	const searchers, made = 4, 12
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range searchers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					find(root, nil, fullLimits, c, time.Minute)
				}
			}
		})
	}
	for i := range made {
		mustMkdir(t, filepath.Join(root, fmt.Sprintf("src/pkg/x/r%d/.git", i)))
		time.Sleep(time.Millisecond)
	}
	close(done)
	wg.Wait()
	got := find(root, nil, fullLimits, c, time.Minute)
	sameFound(t, "after the searches", got, find(root, nil, fullLimits, nil, 0))
	for i := range made {
		if p := filepath.Join(root, fmt.Sprintf("src/pkg/x/r%d/.git", i)); !slices.Contains(got.dotgits, p) {
			t.Errorf("%s not found", p)
		}
	}
}

// TestSearchCacheSkipsUntrustedFilesystems: a tree on a filesystem whose
// change times the kernel does not keep itself is not remembered: here
// /proc, the one such filesystem every Linux system has.
func TestSearchCacheSkipsUntrustedFilesystems(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel"); err != nil {
		t.Skip("no /proc here")
	}
	c := NewSearchCache()
	find("/proc/sys/kernel", nil, searchLimits{0, 1000}, c, time.Minute)
	if len(c.trees) != 0 {
		t.Errorf("the cache remembered a tree of /proc: %v", slices.Collect(func(yield func(string) bool) {
			for k := range c.trees {
				yield(k)
			}
		}))
	}
}

// TestBuildWithSearchCache: Build with Settings.Search protects a
// repository and a project file made in the root after an earlier call,
// exactly as Build without a cache does. The tree is
// left unchanged for ctimeSlack first, so that the first call's search
// remembers it.
func TestBuildWithSearchCache(t *testing.T) {
	home := fakeHome(t)
	root := cacheTree(t)
	s := testSettings(t, home)
	s.Search = NewSearchCache()
	time.Sleep(ctimeSlack + 200*time.Millisecond)
	mustBuild(t, s, Call{ID: "c1", Roots: []string{root}})

	// What a command of the first call does.
	gitInitAt(t, filepath.Join(root, "a/b/c/d"))
	mustWrite(t, filepath.Join(root, "src/toolhost.yaml"), "")

	got := mustBuild(t, s, Call{ID: "c2", Roots: []string{root}})
	s.Search = nil
	full := mustBuild(t, s, Call{ID: "c2", Roots: []string{root}})
	for _, rel := range []string{"a/b/c/d/.git/hooks", "a/b/c/d/.git/config", "src/toolhost.yaml"} {
		if m := effectiveMount(got, filepath.Join(root, rel)); m == nil || m.Kind != MountRead {
			t.Errorf("%s: %+v, want read-only", rel, m)
		}
	}
	// The call's private tmp and its stages have names of their own each
	// time.
	notTmp := func(ms []Mount) []Mount {
		ms = slices.DeleteFunc(slices.Clone(ms), func(m Mount) bool { return m.Target == "/tmp" || m.Target == "/var/tmp" })
		for i := range ms {
			ms[i].Stage = ""
		}
		return ms
	}
	if !reflect.DeepEqual(notTmp(got.Mounts), notTmp(full.Mounts)) {
		t.Errorf("mounts with the cache differ from those without:\n%+v\n%+v", got.Mounts, full.Mounts)
	}
}

func runTool(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
}

package confine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/internal/testenv"
)

// TestBuildProtectsNestedRepositories: a repository nested in a root (a
// .git directory, a .git file naming a git directory in the root's
// .git/modules, a bare repository) keeps its hooks, config and info
// read-only like the root's, and toolhost's project files are read-only
// at any depth, each bound once (NFR-SEC-06).
func TestBuildProtectsNestedRepositories(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	gitInitAt(t, root)
	sub := filepath.Join(root, "sub")
	gitInitAt(t, sub)
	// A submodule's checkout: its .git is a file naming the git directory
	// in the root's .git/modules.
	modDir := filepath.Join(root, ".git/modules/x")
	gitInitBare(t, modDir)
	mustWrite(t, filepath.Join(root, "vendor/x/.git"), "gitdir: ../../.git/modules/x\n")
	bare := filepath.Join(root, "remotes/origin.git")
	gitInitBare(t, bare)
	// A nested repository's core.hooksPath names a directory of its own.
	mustWrite(t, filepath.Join(sub, ".git/config"), "[core]\n\thooksPath = .husky\n")
	mustMkdir(t, filepath.Join(sub, ".husky"))
	deep := filepath.Join(root, "a/b/c/d/e")
	gitInitAt(t, deep)
	projects := []string{
		filepath.Join(root, "toolhost.toml"), filepath.Join(sub, "toolhost.yaml"),
		filepath.Join(root, "a/b/c/toolhost.yml"), filepath.Join(deep, "toolhost.toml"),
	}
	for _, p := range projects {
		mustWrite(t, p, "# a project's configuration\n")
	}
	// A link to another tree is not followed: what it leads to is not the
	// root's to protect, nor to show.
	other := t.TempDir()
	gitInitAt(t, other)
	if err := os.Symlink(other, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}

	s := testSettings(t, home)
	s.Protected = []string{filepath.Join(root, "toolhost.toml"), filepath.Join(root, "toolhost.yaml")}
	p := mustBuild(t, s, Call{ID: "c1", Roots: []string{root}})

	readOnly := []string{
		"sub/.git/hooks", "sub/.git/config", "sub/.git/info", "sub/.husky",
		"vendor/x/.git", ".git/modules/x/hooks", ".git/modules/x/config",
		"remotes/origin.git/hooks", "remotes/origin.git/config",
		"a/b/c/d/e/.git/hooks", "a/b/c/d/e/.git/config",
	}
	for _, rel := range readOnly {
		if m := effectiveMount(p, filepath.Join(root, rel)); m == nil || m.Kind != MountRead {
			t.Errorf("%s: %+v, want read-only", rel, m)
		}
	}
	for _, gd := range []string{"sub/.git", "a/b/c/d/e/.git", ".git/modules/x", "remotes/origin.git"} {
		if findMount(p, MountStage, filepath.Join(root, gd)) == nil {
			t.Errorf("%s is not a mount point: a command could rename it away and put another in its place", gd)
		}
	}
	for _, f := range projects {
		n := 0
		for _, m := range p.Mounts {
			if m.Target == f {
				n++
			}
		}
		if m := effectiveMount(p, f); m == nil || m.Kind != MountRead || n != 1 {
			t.Errorf("%s: %+v bound %d times, want read-only once", f, m, n)
		}
	}
	for _, m := range p.Mounts {
		if within(m.Target, other) || within(m.Source, other) {
			t.Errorf("the search followed a link out of the root: %+v", m)
		}
	}
	if m := effectiveMount(p, filepath.Join(root, "sub/keep.txt")); m == nil || m.Kind != MountWrite {
		t.Errorf("the nested repository's work tree: %+v, want writable", m)
	}
	if len(p.Uncovered) != 0 {
		t.Errorf("Uncovered = %q, want nothing: the search covered the whole tree", p.Uncovered)
	}
}

// TestSearchTreeStatesWhatItMissed: past the depth or the entries it may
// read, or where another filesystem is mounted, the search stops, and
// says so with the tree, how much and an example, for the caller to
// record.
func TestSearchTreeStatesWhatItMissed(t *testing.T) {
	root := t.TempDir()
	// wide is made first: the search reads the oldest directories first.
	for i := range 30 {
		mustWrite(t, filepath.Join(root, "wide", fmt.Sprintf("f%02d", i)), "")
	}
	mustMkdir(t, filepath.Join(root, "wide/zz"))
	mustMkdir(t, filepath.Join(root, "1/2/3/.git/hooks"))
	mustWrite(t, filepath.Join(root, "1/2/3/4/toolhost.toml"), "")

	for _, c := range []struct {
		name      string
		lim       searchLimits
		dotgits   int
		projects  int
		uncovered string // a phrase of the one sentence wanted, "" for none
	}{
		{"everything", searchLimits{6, 1000}, 1, 1, ""},
		{"too deep", searchLimits{2, 1000}, 0, 0, "1 directories more than 2 levels below " + root + ", such as " + filepath.Join(root, "1/2/3")},
		{"too many", searchLimits{6, 20}, 0, 0, "stopped after 20 entries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := find(root, nil, c.lim, nil, 0)
			if len(f.dotgits) != c.dotgits || len(f.projects) != c.projects {
				t.Errorf("found %q and %q, want %d .git and %d project files", f.dotgits, f.projects, c.dotgits, c.projects)
			}
			switch {
			case c.uncovered == "" && len(f.uncovered) > 0:
				t.Errorf("uncovered: %q, want nothing", f.uncovered)
			case c.uncovered != "" && (len(f.uncovered) != 1 || !strings.Contains(f.uncovered[0], c.uncovered)):
				t.Errorf("uncovered: %q, want one sentence saying %q", f.uncovered, c.uncovered)
			}
		})
	}

	// The state directory is not searched: it is hidden anyway.
	if f := find(root, []string{filepath.Join(root, "1")}, searchLimits{6, 1000}, nil, 0); len(f.dotgits)+len(f.projects) != 0 {
		t.Errorf("searched a skipped tree: %q %q", f.dotgits, f.projects)
	}
}

// TestSearchTreeStopsAtMounts: a filesystem mounted below the tree is
// not entered, and is stated. /dev holds such mounts (devpts, a tmpfs
// at /dev/shm) wherever the tests run in a normal system.
func TestSearchTreeStopsAtMounts(t *testing.T) {
	var mounted []string
	for _, d := range []string{"/dev/pts", "/dev/shm", "/dev/mqueue"} {
		if a, b := devOf(t, "/dev"), devOf(t, d); a != 0 && b != 0 && a != b {
			mounted = append(mounted, d)
		}
	}
	if len(mounted) == 0 {
		t.Skip("no filesystem is mounted below /dev here")
	}
	f := find("/dev", nil, searchLimits{1, 20000}, nil, 0)
	got := strings.Join(f.uncovered, "\n")
	if !strings.Contains(got, "other filesystems mounted there") {
		t.Errorf("uncovered %q, want the mounts below /dev (%s) stated", f.uncovered, strings.Join(mounted, ", "))
	}
}

func devOf(t *testing.T, p string) uint64 {
	t.Helper()
	d, ok, err := treeDevice(p)
	if err != nil || !ok {
		return 0
	}
	return d
}

// BenchmarkSearchTree measures the search Build runs for every call, on a
// tree of 20000 files (where the entry limit stops it) and on the
// repository holding this package, when the tests run from a checkout:
// in full, and with a SearchCache that holds the tree (cached: one statx
// per directory). The synthetic tree was just made, so its cache's clock
// is moved past ctimeSlack; the repository's is the real one, and what
// changed in it in the last seconds is read again, as in use.
func BenchmarkSearchTree(b *testing.B) {
	syn := b.TempDir()
	for i := range 20 {
		for j := range 20 {
			d := filepath.Join(syn, fmt.Sprint("d", i), fmt.Sprint("e", j))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			for k := range 50 {
				if err := os.WriteFile(filepath.Join(d, fmt.Sprint("f", k)), nil, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	trees := map[string]string{"20k-files": syn}
	if repo, err := filepath.Abs("../../.."); err == nil && isDir(filepath.Join(repo, ".git")) {
		trees["this-repository"] = repo
	}
	lim := searchLimits{walkMaxDepth, walkMaxEntries}
	for _, name := range slices.Sorted(maps.Keys(trees)) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				find(trees[name], nil, lim, nil, 0)
			}
		})
		b.Run(name+"-cached", func(b *testing.B) {
			c := NewSearchCache()
			var ahead time.Duration
			if name == "20k-files" {
				ahead = time.Minute
			}
			find(trees[name], nil, lim, c, ahead)
			read, dirs := 0, 0
			for b.Loop() {
				f := find(trees[name], nil, lim, c, ahead)
				read += f.read
				dirs++
			}
			b.ReportMetric(float64(read)/float64(dirs), "dirs-read/op")
			b.ReportMetric(float64(len(cached(c, trees[name]))), "dirs-cached")
		})
	}
}

// find is searchTree for toolhost's default project files, started ahead
// of now: a search started d ahead is what one sees once the tree it
// reads has not changed for d, which a SearchCache then remembers.
func find(tree string, skip []string, lim searchLimits, c *SearchCache, ahead time.Duration) found {
	return searchTree(tree, search{skip: skip, lim: lim, projects: config.ProjectFileNames(), cache: c, start: time.Now().Add(ahead).UnixNano()})
}

// cached is what c remembers of tree, searched for the default project
// files.
func cached(c *SearchCache, tree string) map[string]listing {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.trees[searchKey(tree, config.ProjectFileNames())]
}

// gitInitAt makes dir a repository with the real git, as a user would;
// without git the test skips, or fails where git is required (testenv).
func gitInitAt(t *testing.T, dir string) {
	t.Helper()
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init %s: %v\n%s", dir, err, out)
	}
}

func gitInitBare(t *testing.T, dir string) {
	t.Helper()
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	if out, err := exec.Command("git", "init", "-q", "--bare", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init --bare %s: %v\n%s", dir, err, out)
	}
}

// TestBuildProtectsOldestSubmodules: past the bound of submodules'
// git directories protected in .git/modules, the ones a command made to
// push the real ones out come last, being newest, and the bound is
// stated (the red team's submodule past the bound).
func TestBuildProtectsOldestSubmodules(t *testing.T) {
	if birthTime(t.TempDir()) == 0 {
		t.Skip("this filesystem records no birth time: submodules are protected in name order")
	}
	home := fakeHome(t)
	root := t.TempDir()
	gitInitAt(t, root)
	zlib := filepath.Join(root, ".git/modules/zlib")
	gitInitBare(t, zlib)
	for i := range maxModules + 6 {
		mustMkdir(t, filepath.Join(root, ".git/modules", fmt.Sprintf("a%03d", i)))
	}
	p := mustBuild(t, testSettings(t, home), Call{ID: "c1", Roots: []string{root}})
	for _, rel := range []string{"hooks", "config"} {
		if m := effectiveMount(p, filepath.Join(zlib, rel)); m == nil || m.Kind != MountRead {
			t.Errorf("the real submodule's %s: %+v, want read-only", rel, m)
		}
	}
	if got := strings.Join(p.Uncovered, "\n"); !strings.Contains(got, fmt.Sprintf("holds %d directories; the %d oldest were protected", maxModules+7, maxModules)) {
		t.Errorf("Uncovered = %q, want the bound stated", p.Uncovered)
	}
}

// needBirthTime skips where the filesystem of t's temporary directories
// records no birth time: the search then reads breadth first.
func needBirthTime(t *testing.T) {
	t.Helper()
	if birthTime(t.TempDir()) == 0 {
		t.Skip("this filesystem records no birth time")
	}
}

// TestSearchTreeReadsOldestFirst: directories a command made after the
// user's tree cannot exhaust the search's bound before it reaches an
// older nested repository, whatever their names and depth (the red team's search bound padded by a command). Breadth first,
// the padded directories of the first level were all read before
// vendor/lib.
func TestSearchTreeReadsOldestFirst(t *testing.T) {
	needBirthTime(t)
	root := t.TempDir()
	lib := filepath.Join(root, "vendor", "lib")
	mustMkdir(t, filepath.Join(lib, ".git", "hooks"))
	for _, d := range []string{"a", "b", "c"} {
		for i := range 40 {
			mustWrite(t, filepath.Join(root, d, fmt.Sprintf("f%02d", i)), "")
		}
	}
	f := find(root, nil, searchLimits{6, 50}, nil, 0)
	if !slices.Contains(f.dotgits, filepath.Join(lib, ".git")) {
		t.Errorf("found %q, want %s: newer directories used up the bound first", f.dotgits, filepath.Join(lib, ".git"))
	}
	if len(f.uncovered) != 1 || !strings.Contains(f.uncovered[0], "stopped after 50 entries") {
		t.Errorf("uncovered %q, want the bound stated", f.uncovered)
	}
}

// TestBuildRemembersNestedRepositories: a repository one call's search
// found stays protected in later calls when a command pads a directory
// the search must read first (an old one: its birth time does not help)
// past the search's bound, and is remembered across toolhost processes,
// in the state directory.
func TestBuildRemembersNestedRepositories(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	lib := filepath.Join(root, "vendor", "lib")
	gitInitAt(t, lib)
	s := testSettings(t, home)
	p := mustBuild(t, s, Call{ID: "c1", Roots: []string{root}})
	if m := effectiveMount(p, filepath.Join(lib, ".git/hooks")); m == nil || m.Kind != MountRead {
		t.Fatalf("first call: hooks %+v, want read-only", m)
	}
	// The command of the first call fills vendor/ so that the search
	// stops there, before vendor/lib.
	for i := range walkMaxEntries + 1 {
		f, err := os.Create(filepath.Join(root, "vendor", fmt.Sprintf("pad%05d", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if f := find(root, nil, searchLimits{walkMaxDepth, walkMaxEntries}, nil, 0); slices.Contains(f.dotgits, filepath.Join(lib, ".git")) {
		t.Fatalf("the padding did not stop the search before vendor/lib: the test proves nothing")
	}
	p = mustBuild(t, s, Call{ID: "c2", Roots: []string{root}})
	for _, rel := range []string{".git/hooks", ".git/config"} {
		if m := effectiveMount(p, filepath.Join(lib, rel)); m == nil || m.Kind != MountRead {
			t.Errorf("after the padding: %s %+v, want read-only: an earlier search found it", rel, m)
		}
	}
	if got := strings.Join(p.Uncovered, "\n"); !strings.Contains(got, "stopped after") {
		t.Errorf("Uncovered = %q, want the cut search stated", p.Uncovered)
	}
}

// TestBuildPinsNestedRepositories: every directory between a root and a
// nested repository's git directory is a mount point, so a command
// cannot move the repository deeper than the next call's search looks
// and write its hooks there (the red team's repository moved past the depth).
func TestBuildPinsNestedRepositories(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	lib := filepath.Join(root, "a", "vendor", "lib")
	gitInitAt(t, lib)
	bare := filepath.Join(root, "remotes", "origin.git")
	gitInitBare(t, bare)
	p := mustBuild(t, testSettings(t, home), Call{ID: "c1", Roots: []string{root}})
	for _, d := range []string{"a", "a/vendor", "a/vendor/lib", "a/vendor/lib/.git", "remotes", "remotes/origin.git"} {
		if findMount(p, MountWrite, filepath.Join(root, d)) == nil && findMount(p, MountStage, filepath.Join(root, d)) == nil {
			t.Errorf("%s is not a mount point: a command could move the repository below it out of the next search's reach", d)
		}
	}
	if findMount(p, MountWrite, filepath.Join(root, "a/other")) != nil {
		t.Errorf("pinned a directory no repository lies in")
	}
}

// TestBuildBoundsNestedMounts: a root holding more nested repositories
// than a call protects gets at most maxNestedMounts mounts for them, the
// oldest repository first, the rest stated and named in the output's
// hint; Build stays fast (it was quadratic in its mounts), and stops
// when the call's context ends (the red team's mount flood).
func TestBuildBoundsNestedMounts(t *testing.T) {
	needBirthTime(t)
	home := fakeHome(t)
	root := t.TempDir()
	lib := filepath.Join(root, "vendor", "lib")
	gitInitAt(t, lib)
	const flood = maxNestedMounts / 2 // each costs at least two mounts (.git, hooks), three with its pin
	for i := range flood {
		mustMkdir(t, filepath.Join(root, fmt.Sprintf("r%04d", i), ".git", "hooks"))
	}
	s := testSettings(t, home)
	start := time.Now()
	p := mustBuild(t, s, Call{ID: "c1", Roots: []string{root}})
	took := time.Since(start)
	if len(p.Mounts) > maxNestedMounts+200 {
		t.Errorf("%d mounts for %d nested repositories, want at most about %d", len(p.Mounts), flood+1, maxNestedMounts)
	}
	for _, rel := range []string{".git/hooks", ".git/config"} {
		if m := effectiveMount(p, filepath.Join(lib, rel)); m == nil || m.Kind != MountRead {
			t.Errorf("the oldest nested repository's %s: %+v, want read-only", rel, m)
		}
	}
	if got := strings.Join(p.Uncovered, "\n"); !strings.Contains(got, "were left unprotected") || !strings.Contains(got, root) {
		t.Errorf("Uncovered = %q, want the bound stated with the root", p.Uncovered)
	}
	if !slices.Equal(p.Unprotected, []string{root}) {
		t.Errorf("Unprotected = %q, want the root %s", p.Unprotected, root)
	}
	if h := UncoveredHint(p); !strings.HasPrefix(h, "sandbox: "+root+" ") || strings.Contains(h, "\n") {
		t.Errorf("UncoveredHint = %q, want one line naming the root", h)
	}
	if took > 20*time.Second {
		t.Errorf("Build took %v", took)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, cleanup, err := Build(ctx, s, Call{ID: "c2", Roots: []string{root}}); err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "c2") {
		cleanup()
		t.Errorf("Build with its context done: %v, want it to stop, naming the call", err)
	}
}

// TestCompareBirth: the one "oldest first" order of the search, the
// submodules and the nested protection: older first, unknown (0) last,
// equals tied for a stable sort to keep.
func TestCompareBirth(t *testing.T) {
	tests := []struct {
		a, b int64
		want int
	}{
		{1, 2, -1}, {2, 1, 1}, {5, 5, 0},
		{0, 7, 1}, {7, 0, -1}, {0, 0, 0},
	}
	for _, tt := range tests {
		if got := compareBirth(tt.a, tt.b); got != tt.want {
			t.Errorf("compareBirth(%d, %d) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	times := []int64{30, 0, 10, 0, 20, 10}
	idx := []int{0, 1, 2, 3, 4, 5}
	slices.SortStableFunc(idx, func(i, j int) int { return compareBirth(times[i], times[j]) })
	if want := []int{2, 5, 4, 0, 1, 3}; !slices.Equal(idx, want) {
		t.Errorf("sorted = %v, want %v", idx, want)
	}
}

// TestBuildProtectsConfiguredProjectFiles: the project files kept
// read-only at any depth are those Settings.ProjectFileNames names (the
// host's config.ProjectFileNames), not a list of the search's own. A
// SearchCache shared by searches for other names does not answer one with
// the other's listings (NFR-SEC-06).
func TestBuildProtectsConfiguredProjectFiles(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	custom := filepath.Join(root, "a/b/agent.json")
	usual := filepath.Join(root, "a/toolhost.toml")
	mustWrite(t, custom, "{}\n")
	mustWrite(t, usual, "")
	s := testSettings(t, home)
	s.Search = NewSearchCache()
	time.Sleep(ctimeSlack + 200*time.Millisecond) // old enough for the cache to keep
	tests := []struct {
		names     []string
		ro, notRO string
	}{
		{config.ProjectFileNames(), usual, custom},
		{[]string{"agent.json"}, custom, usual},
		{config.ProjectFileNames(), usual, custom}, // from the cache the other names' search left
	}
	for i, tt := range tests {
		s.ProjectFileNames = tt.names
		p := mustBuild(t, s, Call{ID: fmt.Sprint("c", i), Roots: []string{root}})
		if m := effectiveMount(p, tt.ro); m == nil || m.Kind != MountRead {
			t.Errorf("names %q: %s: %+v, want read-only", tt.names, tt.ro, m)
		}
		if m := effectiveMount(p, tt.notRO); m == nil || m.Kind != MountWrite {
			t.Errorf("names %q: %s: %+v, want writable like the rest of the root", tt.names, tt.notRO, m)
		}
	}
}

//go:build linux

package confine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testenv"
)

// TestRecoverChecksOfKilledToolhost: Build records the call's check in
// the state directory, and the check removes the record when it runs. A
// toolhost killed before its check ran leaves the record; the next one
// runs that check, with the killed call's start, over its roots: a
// repository the command made, with a core.fsmonitor, loses it. A live
// toolhost's record is left alone.
func TestRecoverChecksOfKilledToolhost(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	root := canonicalTempDir(t)
	gitInitAt(t, root)
	s := testSettings(t, fakeHome(t))
	_, st, cleanup, err := buildCall(context.Background(), s, Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	base := checkBase(s.StateDir)
	if want := fmt.Sprintf("call-%d-c1-", os.Getpid()); st.record == "" || filepath.Dir(st.record) != base || !strings.HasPrefix(filepath.Base(st.record), want) {
		t.Fatalf("the check's record is %q, want %s/%s*", st.record, base, want)
	}

	// The command plants, and its toolhost is killed: the record now
	// carries a dead pid.
	deep := filepath.Join(root, "a/b/c/d/e/f/g/h")
	gitInitAt(t, deep)
	mustWrite(t, filepath.Join(deep, ".git/config"), "[core]\n\tfsmonitor = evil\n")
	killed := filepath.Join(base, fmt.Sprintf("call-%d-c1-x", deadPID(t)))
	if err := os.Rename(st.record, killed); err != nil {
		t.Fatal(err)
	}
	st.record = ""
	live := filepath.Join(base, fmt.Sprintf("call-%d-c2-x", os.Getppid()))
	mustWrite(t, live, "{}")
	torn := filepath.Join(base, fmt.Sprintf("call-%d-c3-x", deadPID(t)))
	mustWrite(t, torn, `{"id":"c3","since":`)

	got := recoverChecks(context.Background(), s)
	var found []Neutralized
	for _, rc := range got {
		found = append(found, rc.Found...)
	}
	if len(got) != 2 || len(found) != 1 || found[0].GitDir != filepath.Join(deep, ".git") || !slices.Equal(found[0].Keys, []string{"core.fsmonitor"}) {
		t.Errorf("recovered %+v; want two records, the killed call's setting aside g/h/.git's core.fsmonitor", got)
	}
	if b, _ := os.ReadFile(filepath.Join(deep, ".git/config")); strings.Contains(string(b), "evil") {
		t.Errorf("the killed call's core.fsmonitor is still in place:\n%s", b)
	}
	left, _ := os.ReadDir(base)
	if len(left) != 1 || left[0].Name() != filepath.Base(live) {
		t.Errorf("records left: %v; want only the live toolhost's", left)
	}
	if again := recoverChecks(context.Background(), s); len(again) != 0 {
		t.Errorf("a second recovery ran %+v", again)
	}
}

// TestSettleRemovesItsRecord: the check, once run, removes its record.
func TestSettleRemovesItsRecord(t *testing.T) {
	root := canonicalTempDir(t)
	s := testSettings(t, fakeHome(t))
	_, st, cleanup, err := buildCall(context.Background(), s, Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	if !pathPresent(st.record) {
		t.Fatalf("no record of the check: %q", st.record)
	}
	cleanup()
	if left, _ := os.ReadDir(checkBase(s.StateDir)); len(left) != 0 {
		t.Errorf("records left after the call: %v", left)
	}
}

// TestSettleFindsDeepRepositories: a repository the command makes deeper
// than the search before a call reads (walkMaxDepth) is checked all the
// same: git add -A at the top reaches it at any depth.
func TestSettleFindsDeepRepositories(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	root := canonicalTempDir(t)
	gitInitAt(t, root)
	s := testSettings(t, fakeHome(t))
	s.Search = NewSearchCache()
	_, st, cleanup, err := buildCall(context.Background(), s, Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	deep := filepath.Join(root, "1/2/3/4/5/6/7/8/9/10/11")
	gitInitAt(t, deep)
	mustWrite(t, filepath.Join(deep, ".git/config"), "[core]\n\tfsmonitor = evil\n")
	found := st.run(context.Background())
	if len(found) != 1 || found[0].Repo != filepath.Join(deep, ".git") {
		t.Errorf("found %+v; want the repository 11 levels down", found)
	}
	if len(st.bounds) != 0 {
		t.Errorf("bounds %q; the check read the whole root", st.bounds)
	}
}

// TestSearchCacheKeepsDeeperListings: Build's search, which stops at
// walkMaxDepth, keeps in the cache what the check after a call read
// deeper, so the next check validates it rather than read it again.
func TestSearchCacheKeepsDeeperListings(t *testing.T) {
	root := canonicalTempDir(t)
	deep := filepath.Join(root, "1/2/3/4/5/6/7/8")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	c := NewSearchCache()
	find(root, nil, searchLimits{settleMaxDepth, walkMaxEntries}, c, time.Minute)
	if _, ok := cached(c, root)[deep]; !ok {
		t.Fatalf("the deep search did not cache %s", deep)
	}
	find(root, nil, searchLimits{walkMaxDepth, walkMaxEntries}, c, time.Minute)
	if _, ok := cached(c, root)[deep]; !ok {
		t.Errorf("the search to depth %d dropped %s from the cache", walkMaxDepth, deep)
	}
	if f := find(root, nil, searchLimits{settleMaxDepth, walkMaxEntries}, c, time.Minute); f.read != 0 {
		t.Errorf("the next deep search read %d directories again, want none", f.read)
	}
}

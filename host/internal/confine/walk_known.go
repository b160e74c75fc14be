package confine

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// maxKnown bounds the repositories remembered per tree: the oldest are
// kept, which a command cannot outnumber with repositories of its own.
const maxKnown = 1000

// The repositories a search of a writable tree found are remembered in
// the state directory (StateDir/sandbox/known/<hash of the tree>), which
// commands never see, and protected by every later call whatever its
// search reaches: a command that pads the tree so that the next search
// stops before a repository, or fills a directory the search must read
// first with entries, does not take that repository's protection away.
// A file, not SearchCache's memory, so that it holds
// across toolhost processes sharing the state directory (one `toolhost
// call` per command, say). What no search ever found before a command
// could reach it stays a gap, stated in Policy.Uncovered.

// knownFile is where the repositories found in tree are remembered.
func knownFile(stateDir, tree string) string {
	sum := sha256.Sum256([]byte(tree))
	return filepath.Join(stateDir, "sandbox", "known", hex.EncodeToString(sum[:])[:16])
}

// readKnown returns the repositories remembered for tree that still lie
// in it: .git entries and bare git directories, absolute and clean. A
// line that is not one is skipped.
func readKnown(stateDir, tree string) []string {
	f, err := os.Open(knownFile(stateDir, tree))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(io.LimitReader(f, 4<<20))
	for sc.Scan() && len(out) < maxKnown {
		p := sc.Text()
		if !isAbsClean(p) || p == tree || !within(p, tree) || !pathPresent(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// writeKnown remembers repos (oldest first) for tree, at most maxKnown of
// them. It replaces the file in one rename, so a concurrent call reads
// the old list or the new one; what it cannot write is found again by
// the next search, where it reaches.
func writeKnown(stateDir, tree string, repos []string) {
	repos = repos[:min(len(repos), maxKnown)]
	path := knownFile(stateDir, tree)
	if old, err := os.ReadFile(path); err == nil && string(old) == knownText(repos) {
		return // unchanged: most calls
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".known-")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(knownText(repos))
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}

func knownText(repos []string) string {
	if len(repos) == 0 {
		return ""
	}
	return strings.Join(repos, "\n") + "\n"
}

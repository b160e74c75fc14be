//go:build unix

package search

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
)

// A FIFO is counted, never opened: reading one would wait for a writer
// forever.
func TestSearchSkipsFIFO(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "needle\n")
	if err := syscall.Mkfifo(filepath.Join(root, "pipe"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	sb := newSandbox(t, root)
	done := make(chan abi.SearchResult)
	go func() { done <- runSearch(t, sb, context.Background(), abi.SearchRequest{Query: "needle"}, 1<<20) }()
	select {
	case res := <-done:
		if res.Skipped.Special != 1 || res.TotalMatches != 1 {
			t.Errorf("skipped %+v, total %d; want the FIFO counted once and a.txt matched", res.Skipped, res.TotalMatches)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the search hung on a FIFO")
	}
	list := runSearch(t, sb, context.Background(), abi.SearchRequest{Mode: abi.SearchList}, 1<<20)
	if len(list.Files) != 2 || list.Files[1].Type != "other" {
		t.Errorf("list: %+v, want a.txt and the FIFO as other", list.Files)
	}
}

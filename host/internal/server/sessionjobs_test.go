package server

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/proc"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// When an MCP session ends, the background jobs of its own conversation
// are killed after the grace; another conversation's are not.
func TestSessionEndKillsItsJobs(t *testing.T) {
	root := t.TempDir()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	cfg.Tools.Jobs.SessionEndGraceSeconds = 1
	unconfined(cfg)
	h, err := host.Open(context.Background(), host.Options{PluginDir: testplugin.BuiltIns(t), Config: cfg, CacheDir: testplugin.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	s, err := New(h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, st) }()
	tc := connectTest(t, ct, root, nil)
	tc.call(t, "list_directory", map[string]any{"path": "."}, nil)
	s.mu.Lock()
	var conv string
	for _, c := range s.conversations {
		conv = c
	}
	s.mu.Unlock()
	if conv == "" {
		t.Fatal("the session has no conversation")
	}
	m := h.Inside(inside.Key{}).Jobs
	start := func(conv string) string {
		id, err := m.Start(context.Background(), conv, jobs.Command{Spec: proc.Spec{Command: "sleep 60", Dir: root}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	mine, other := start(conv), start("pinned")
	running := func(conv, id string) bool {
		r, err := m.Do(context.Background(), conv, abi.JobRequest{Op: abi.JobListOp})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range r.Jobs {
			if j.ID == id {
				return j.Running
			}
		}
		return false
	}
	tc.session.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if !running(conv, mine) {
		t.Fatal("the session's job was killed before the grace")
	}
	deadline := time.Now().Add(10 * time.Second)
	for running(conv, mine) {
		if time.Now().After(deadline) {
			t.Fatal("the session's job outlived it by 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !running("pinned", other) {
		t.Error("another conversation's job was killed with the session")
	}
}

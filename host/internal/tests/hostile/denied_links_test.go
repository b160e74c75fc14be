//go:build unix

package hostile_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// A model that knows (or guesses) the names of links inside a denied
// directory asks the real tools about them. The directory is denied as
// written, so no tool follows a link in it: not to a file outside it
// (its content and its info stay unseen) and not within it, and no
// refusal tells where a link leads.
func TestDeniedDirectoryLinksLeadNowhere(t *testing.T) {
	h, root := openHost(t, func(c *config.Config, _ *host.Options) {
		c.Tools.Sandbox.DeniedPatterns = []string{"secret/**"}
	})
	deniedLinksWrite(t, root, "a.txt", "the-public-content\n")
	deniedLinksWrite(t, root, "secret/s.txt", "the-secret-content\n")
	for link, target := range map[string]string{
		"secret/lnk": "../a.txt", "secret/lnk2": "s.txt", "hop": "secret/lnk", "door": "secret",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	calls := []engine.Call{
		call("info", "file_info", `{"path":"secret/lnk"}`),
		call("multi", "read_multiple_files", `{"paths":["secret/lnk"]}`),
		call("read", "read_file", `{"path":"secret/lnk"}`),
		call("inner", "read_file", `{"path":"secret/lnk2"}`),
		call("innerinfo", "file_info", `{"path":"secret/lnk2"}`),
		call("hop", "file_info", `{"path":"hop"}`),
		call("door", "read_file", `{"path":"door/s.txt"}`),
	}
	rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{}, 2*time.Minute)
	for i, r := range rs {
		out, _ := json.Marshal(r)
		for _, leak := range []string{"the-public-content", "the-secret-content", "a.txt", "s.txt", "sha256"} {
			if leak == "s.txt" && strings.Contains(string(calls[i].Arguments), leak) {
				continue // named by the call itself
			}
			if strings.Contains(string(out), leak) {
				t.Errorf("%s %s tells %q of where the link leads: %s", calls[i].Name, calls[i].Arguments, leak, out)
			}
		}
		// file_info may describe hop, a link outside the denied
		// directory, as a link; only that it leads where tools may not go.
		if calls[i].ID == "hop" && r.OK && !strings.Contains(string(r.Structured), `"target_denied":true`) {
			t.Errorf("file_info hop = %s, want a link that leads where tools may not go", out)
		}
		if r.OK && calls[i].Name != "read_multiple_files" && calls[i].ID != "hop" {
			t.Errorf("%s %s succeeded: %s", calls[i].Name, calls[i].Arguments, out)
		}
	}
}

func deniedLinksWrite(t *testing.T, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// file_info describes a link that leads out of the roots or to a denied
// path as a link, saying only that, never where; a tool that reads still
// cannot follow it.
func TestLinksOutDescribedNeverFollowed(t *testing.T) {
	outside := t.TempDir()
	deniedLinksWrite(t, outside, "elsewhere-secret.txt", "the-outside-content\n")
	h, root := openHost(t, func(c *config.Config, _ *host.Options) {
		c.Tools.Sandbox.DeniedPatterns = []string{"secret/**"}
	})
	deniedLinksWrite(t, root, "secret/s.txt", "the-secret-content\n")
	for link, target := range map[string]string{"out": filepath.Join(outside, "elsewhere-secret.txt"), "key": "secret/s.txt"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	calls := []engine.Call{
		call("out", "file_info", `{"path":"out"}`),
		call("key", "file_info", `{"path":"key"}`),
		call("readout", "read_file", `{"path":"out"}`),
		call("readkey", "read_file", `{"path":"key"}`),
	}
	rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{}, 2*time.Minute)
	for i, r := range rs[:2] {
		out, _ := json.Marshal(r)
		for _, leak := range []string{"the-outside-content", "the-secret-content", "elsewhere", outside, "s.txt"} {
			if strings.Contains(string(out), leak) {
				t.Errorf("%s %s tells %q: %s", calls[i].Name, calls[i].Arguments, leak, out)
			}
		}
	}
	for i, want := range []string{`"target_outside":true`, `"target_denied":true`} {
		if !rs[i].OK || !strings.Contains(string(rs[i].Structured), `"type":"symlink"`) || !strings.Contains(string(rs[i].Structured), want) {
			t.Errorf("file_info %s = %+v, want a symlink with %s", calls[i].Arguments, rs[i], want)
		}
	}
	for _, r := range rs[2:] {
		if r.OK || r.Error.Kind != "SandboxViolation" {
			t.Errorf("read_file %s = %+v, want a SandboxViolation", r.ID, r)
		}
	}
}

// git follows a .git that is a symbolic link, so git's configuration
// reached through one is protected as .git/config is: a model that
// finds (or makes) such a link cannot write hooks or config through it.
func TestGitThroughALinkStaysProtected(t *testing.T) {
	h, root := openHost(t, nil)
	deniedLinksWrite(t, root, "realgit/config", "[core]\n")
	if err := os.Symlink("realgit", filepath.Join(root, ".git")); err != nil {
		t.Fatal(err)
	}
	read(t, h, ".git/config")
	calls := []engine.Call{
		call("cfg", "write_file", `{"path":".git/config","content":"[core]\n\tfsmonitor = touch pwned\n"}`),
		call("hook", "write_file", `{"path":".git/hooks/pre-commit","content":"#!/bin/sh\ntouch pwned\n"}`),
	}
	rs := process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{Approver: approveAll()}, 2*time.Minute)
	for _, r := range rs {
		if r.OK || r.Error.Kind != "SandboxViolation" {
			t.Errorf("write_file %s = %+v, want a SandboxViolation", r.ID, r)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "realgit/config")); string(b) != "[core]\n" {
		t.Errorf("git's config through the link was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "realgit/hooks/pre-commit")); err == nil {
		t.Error("a hook was written through the link")
	}
}

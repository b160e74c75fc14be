package host_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
)

// A profile lists and runs only its tools, under its
// stricter approval, and never offers what the policy denies.
func TestProfile(t *testing.T) {
	var cfg *config.Config
	h, root := open(t, func(c *config.Config, _ *host.Options) {
		c.Profiles = map[string]config.Profile{
			"reviewer": {Tools: []string{"read_file", "list_directory", "run_command"}},
			"careful":  {Tools: []string{"read_file", "write_file"}, ConfirmAll: true},
		}
		cfg = c
	})
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reviewer, err := host.Profile(cfg, "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, m := range h.Inside(inside.Key{}).Engine.Advertised(reviewer) {
		offered = append(offered, m.Name)
	}
	// run_command is in the profile but the default policy denies it.
	if !slices.Equal(offered, []string{"list_directory", "read_file"}) {
		t.Errorf("reviewer offers %v, want list_directory and read_file only", offered)
	}
	tests := []struct {
		name      string
		profile   string
		call      engine.Call
		ok        bool
		confirmed bool // the approver was asked
	}{
		{name: "a tool of the profile runs", profile: "reviewer", call: call("c1", "read_file", `{"path":"a.txt"}`), ok: true},
		{name: "a tool outside the profile is refused", profile: "reviewer", call: call("c2", "write_file", `{"path":"b.txt","content":"x"}`)},
		{name: "a tool the policy denies stays denied", profile: "reviewer", call: call("c3", "run_command", `{"command":"true"}`)},
		{name: "confirm_all asks even for an allowlisted read", profile: "careful", call: call("c4", "read_file", `{"path":"a.txt"}`), ok: true, confirmed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := host.Profile(cfg, tt.profile)
			if err != nil {
				t.Fatal(err)
			}
			asked := false
			approver := engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
				asked = true
				return engine.ApproveAll("the test"), nil
			})
			_, results := h.Process(context.Background(), engine.Batch{Conversation: "profile-test", Calls: []engine.Call{tt.call}},
				host.BatchOptions{Approver: approver, Narrowing: n})
			r := results[0]
			if r.OK != tt.ok || asked != tt.confirmed {
				t.Fatalf("ok %v (want %v), asked %v (want %v): %+v", r.OK, tt.ok, asked, tt.confirmed, r.Error)
			}
			if !tt.ok && (r.Error == nil || !strings.Contains(r.Error.Message, tt.call.ID)) {
				t.Errorf("refusal %+v does not name call %s", r.Error, tt.call.ID)
			}
		})
	}
	if _, err := host.Profile(cfg, "admin"); err == nil || !strings.Contains(err.Error(), "careful, reviewer") {
		t.Errorf("unknown profile: %v, want an error listing the profiles", err)
	}
	if _, err := host.Profile(config.Default(), "admin"); err == nil || !strings.Contains(err.Error(), "[profiles.NAME]") {
		t.Errorf("no profiles: %v, want an error saying how to define one", err)
	}
}

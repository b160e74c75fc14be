package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// A batch narrowed to a dry run (Narrowing.DryRun, an approval's preview
// of a change) writes nothing whatever its plugin does: a call that does
// not ask its plugin for a dry run, as a plugin ignoring the flag would
// not, is refused by the host functions; a dry run of a file tool runs
// unasked and returns its diff; a command is still asked about, and runs
// nothing even when approved. Nobody is asked on a person's behalf.
func TestDryRunNarrowingWritesNothing(t *testing.T) {
	patch := func(body string) string {
		raw, _ := json.Marshal(map[string]any{"patch": body, "dry_run": true})
		return string(raw)
	}
	tests := []struct {
		name, tool, args string
		approve          bool
		want             string // disposition
		ok               bool
		text             string // in the content or the error message
	}{
		{"write_file ignoring dry_run", "write_file", `{"path":"a.txt","content":"new\n"}`, false, "execute", false, "is a dry run"},
		{"write_file dry run", "write_file", `{"path":"a.txt","content":"new\n","dry_run":true}`, false, "execute", true, "+new"},
		{"new file, ignoring dry_run", "write_file", `{"path":"b.txt","content":"x"}`, false, "execute", false, "is a dry run"},
		{"apply_patch dry run", "apply_patch", patch("LP1\nF a.txt\nR\nold\n.\npatched\n.\nEND\n"), false, "execute", true, "+patched"},
		{"run_command is asked about and runs nothing", "run_command", `{"command":"touch ran"}`, true, "confirm", false, "is a dry run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := configFixture(t, Config{Policy: Policy{Approval: ApprovalPrompt, Allowlist: []string{"read_file"}}})
			f.write(t, "a.txt", "old\n")
			f.read(t, "a.txt")
			before := snapshot(t, f.root)
			approver := ApproverFunc(func(context.Context, []Confirmation) (Decision, error) {
				if tt.approve {
					return ApproveAll("test"), nil
				}
				t.Error("a dry run asked for approval")
				return DenyAll("test"), nil
			})
			b := Batch{Conversation: "c", Calls: []Call{{ID: "1", Name: tt.tool, Arguments: json.RawMessage(tt.args)}}}
			p, rs := f.eng.Process(context.Background(), b, approver, RunOptions{Narrowing: Narrowing{DryRun: true}})
			if got := string(p.Calls[0].Disposition); got != tt.want {
				t.Errorf("disposition %s, want %s", got, tt.want)
			}
			r := rs[0]
			text := r.Content
			if r.Error != nil {
				text = r.Error.Message
			}
			if r.OK != tt.ok || !strings.Contains(text, tt.text) {
				t.Errorf("result ok=%v %q, want ok=%v with %q", r.OK, text, tt.ok, tt.text)
			}
			if after := snapshot(t, f.root); !reflect.DeepEqual(after, before) {
				t.Errorf("files changed in a dry run:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// A call asking for its own dry run ("dry_run": true) of a file tool
// that declares one runs without a prompt, even for a tool whose
// manifest requires approval (delete_file), writes nothing, and gives
// its output as any call's; the same call without dry_run is asked
// about, and an operator's requires_approval still asks for the dry run.
func TestOwnDryRunRunsUnasked(t *testing.T) {
	yes := true
	tests := []struct {
		name, tool, args string
		overrides        map[string]Override
		want             string // disposition
		text             string // in the content
	}{
		{"delete_file dry run", "delete_file", `{"path":"a.txt","dry_run":true}`, nil, "execute", "a.txt"},
		{"delete_file", "delete_file", `{"path":"a.txt"}`, nil, "confirm", ""},
		{"write_file dry run", "write_file", `{"path":"a.txt","content":"new\n","dry_run":true}`, nil, "execute", "+new"},
		{"edit_file dry run", "edit_file", `{"path":"a.txt","old_string":"old","new_string":"edited","dry_run":true}`, nil, "execute", "+edited"},
		{"move_file dry run", "move_file", `{"source":"a.txt","destination":"b/c.txt","dry_run":true}`, nil, "execute", "a.txt"},
		{"dry run of a tool the operator asks about", "delete_file", `{"path":"a.txt","dry_run":true}`,
			map[string]Override{"delete_file": {RequiresApproval: &yes}}, "confirm", ""},
		{"run_command has no dry run", "run_command", `{"command":"touch ran","dry_run":true}`, nil, "pre_resolved", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := configFixture(t, Config{Policy: Policy{Approval: ApprovalPrompt, Allowlist: []string{"read_file"}, Overrides: tt.overrides}})
			f.write(t, "a.txt", "old\n")
			f.read(t, "a.txt")
			before := snapshot(t, f.root)
			asked := false
			approver := ApproverFunc(func(context.Context, []Confirmation) (Decision, error) {
				asked = true
				return DenyAll("test"), nil
			})
			b := Batch{Conversation: "c", Calls: []Call{{ID: "1", Name: tt.tool, Arguments: json.RawMessage(tt.args)}}}
			p, rs := f.eng.Process(context.Background(), b, approver, RunOptions{})
			if got := string(p.Calls[0].Disposition); got != tt.want {
				t.Errorf("disposition %s, want %s", got, tt.want)
			}
			if asked != (tt.want == "confirm") {
				t.Errorf("asked = %v for disposition %s", asked, tt.want)
			}
			if r := rs[0]; tt.want == "execute" && (!r.OK || !strings.Contains(r.Content, tt.text)) {
				t.Errorf("result ok=%v %q %+v, want ok with %q", r.OK, r.Content, r.Error, tt.text)
			}
			if after := snapshot(t, f.root); !reflect.DeepEqual(after, before) {
				t.Errorf("files changed in a dry run:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

package hostile_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// A tool's path arguments may sit inside an array (path_args "paths/*",
// as read_multiple_files declares): through host.Open, each element is
// checked against the sandbox before the plugin runs and is what the
// plugin may read; one refused element fails the call naming it by JSON
// pointer, the plugin never running; a key spelled in another case, which
// the plugin's decoder would take, is refused; a call naming more than
// the bound is refused before any path is resolved; and an approval shows
// every element with the path it resolves to.
func TestPathArgsInArraysThroughHost(t *testing.T) {
	asked := true
	h, root := openHost(t, func(c *config.Config, _ *host.Options) {
		c.Tools.Overrides["preadsnamed"] = config.Override{RequiresApproval: &asked}
	}, "preadsnamed")
	preadsWrite(t, filepath.Join(root, "notes.txt"), "notes\n")
	preadsWrite(t, filepath.Join(root, "a.txt"), "alpha\n")
	preadsWrite(t, filepath.Join(root, "sub", "b.txt"), "beta\n")
	preadsWrite(t, filepath.Join(root, "keys", "id_rsa"), "the secret\n") // a default denied pattern

	var shown []engine.Argument
	approver := engine.ApproverFunc(func(_ context.Context, cs []engine.Confirmation) (engine.Decision, error) {
		for _, c := range cs {
			shown = append(shown, c.Arguments...)
		}
		return engine.ApproveAll("the test"), nil
	})
	each := func(paths ...any) string {
		return jsonArgs(t, map[string]any{"path": "notes.txt", "paths": paths, "op": "each"})
	}

	rs := runBatch(t, h, approver, call("both", "preadsnamed", each("a.txt", "sub/b.txt")))
	if !rs[0].OK || rs[0].Content != "alpha\nbeta\n" {
		t.Fatalf("reading two paths named in an array: %+v", rs[0].Error)
	}
	paths := map[string]string{}
	for _, a := range shown {
		if len(a.Paths) == 1 {
			paths[a.Name] = a.Paths[0].String()
		}
	}
	if paths["paths[0]"] != "a.txt" || paths["paths[1]"] != filepath.Join("sub", "b.txt") || paths["path"] != "notes.txt" {
		t.Errorf("the approval showed paths %v; want path, paths[0] and paths[1] with where they resolve", paths)
	}

	many := make([]any, 1001) // and "path": 1,002 paths
	for i := range many {
		many[i] = fmt.Sprintf("f%d.txt", i)
	}
	for _, tc := range []struct {
		name, args, kind string
		says             []string
	}{
		{"a denied element", each("a.txt", "keys/id_rsa"), "SandboxViolation", []string{`argument "/paths/1"`}},
		{"an element out of the root", each("a.txt", "sub/b.txt", "../../etc/passwd"), "SandboxViolation", []string{`argument "/paths/2"`}},
		{"the array's key in another case", jsonArgs(t, map[string]any{"path": "notes.txt", "PATHS": []string{"keys/id_rsa"}, "op": "each"}), "BadArgs", []string{`"PATHS"`, `rename it "paths"`}},
		{"past the bound", each(many...), "SandboxViolation", []string{"1002 paths", "more than the 1000", "at most 1000"}},
	} {
		shown = nil
		rs := runBatch(t, h, approver, call("r", "preadsnamed", tc.args))
		if rs[0].OK || string(rs[0].Error.Kind) != tc.kind {
			t.Errorf("%s: %+v (error %+v), want %s", tc.name, rs[0], rs[0].Error, tc.kind)
			continue
		}
		for _, s := range tc.says {
			if !strings.Contains(rs[0].Error.Message, s) {
				t.Errorf("%s: %q does not say %q", tc.name, rs[0].Error.Message, s)
			}
		}
		if strings.Contains(rs[0].Error.Message+rs[0].Content, "the secret") {
			t.Errorf("%s: the refusal shows the file", tc.name)
		}
		if shown != nil {
			t.Errorf("%s: a person was asked about a call refused before it could run", tc.name)
		}
	}
}

package hostile_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// cpmCase is a new file a tool loads and runs code from without the
// operator choosing to run the project's code: on opening the project in
// an editor, on starting an interpreter there, or because a build
// definition the operator already runs prefers or pulls it in.
type cpmCase struct {
	name    string
	setup   map[string]string // files on disk before the write
	write   string
	content string
	program string // what the reason must name
}

func cpmCases() []cpmCase {
	mk := map[string]string{"Makefile": "all:\n\t@true\n"}
	return []cpmCase{
		// GNU make reads GNUmakefile, then makefile, before Makefile.
		{"GNUmakefile beside Makefile", mk, "GNUmakefile", "all:\n\tid > pwned\n", "GNU make reads instead of the existing"},
		{"makefile beside Makefile", mk, "makefile", "all:\n\tid > pwned\n", "GNU make reads instead of the existing"},
		// IDEs configure a CMake project on open, with its presets and
		// whatever its CMakeLists.txt include()s.
		{"CMake user presets", map[string]string{"CMakeLists.txt": "project(p)\n"}, "CMakeUserPresets.json",
			`{"version":3,"configurePresets":[{"name":"d","cacheVariables":{"CMAKE_PROJECT_INCLUDE":"x.cmake"}}]}`, "loaded by CMake"},
		{"CMake include OPTIONAL", map[string]string{"cm/CMakeLists.txt": "project(p)\ninclude(local.cmake OPTIONAL)\n"}, "cm/local.cmake",
			"execute_process(COMMAND id OUTPUT_FILE pwned)\n", "CMakeLists.txt includes (include(local.cmake OPTIONAL))"},
		// rust-analyzer runs build scripts on open; build = names any file.
		{"Cargo.toml with a build script", nil, "Cargo.toml", "[package]\nname = \"p\"\nversion = \"0.1.0\"\nbuild = \"any.rs\"\n", "loaded by cargo, rust-analyzer"},
		{"MSBuild Directory.Build.props", nil, "Directory.Build.props", "<Project><Target Name=\"X\" BeforeTargets=\"Build\"><Exec Command=\"id\"/></Target></Project>\n", "loaded by MSBuild"},
		{"ESLint flat config", nil, "eslint.config.js", "require('child_process').execSync('id > pwned')\n", "loaded by ESLint"},
		{"irb start-up file", nil, ".irbrc", "system('id > pwned')\n", "loaded by irb"},
		{"pry start-up file", nil, ".pryrc", "system('id > pwned')\n", "loaded by pry"},
		{"R profile", nil, ".Rprofile", "system('id > pwned')\n", "loaded by R"},
		{"a file of an existing install", map[string]string{"node_modules/eslint/package.json": `{"name":"eslint","main":"lib/api.js"}`},
			"node_modules/eslint/lib/api.js", "require('child_process').execSync('id > pwned')\n", "loaded by Node.js"},
		{"Bazel rc", nil, ".bazelrc", "build --run_under=./x.sh\n", "loaded by Bazel"},
		{"envrc sources it after &&", map[string]string{".envrc": "[ -f .envrc.local ] && source .envrc.local\n"}, ".envrc.local", "id > pwned\n", ".envrc includes ([ -f .envrc.local ] && source .envrc.local)"},
	}
}

// cpmAsked writes path through the host with an approver that records
// what it is asked and denies it, and returns the call's disposition and
// the reason it was asked (empty when nobody was asked).
func cpmAsked(t *testing.T, h *host.Host, path, content string) (engine.Disposition, string) {
	t.Helper()
	var reason string
	approver := engine.ApproverFunc(func(_ context.Context, cs []engine.Confirmation) (engine.Decision, error) {
		for _, c := range cs {
			reason = c.Reason
		}
		return engine.DenyAll("the test"), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	plan, rs := h.Process(ctx, engine.Batch{Conversation: "c", Calls: []engine.Call{write(t, "w", path, content)}},
		host.BatchOptions{Approver: approver})
	if len(rs) != 1 || len(plan.Calls) != 1 {
		t.Fatalf("write_file %s: %d results, %d planned calls", path, len(rs), len(plan.Calls))
	}
	return plan.Calls[0].Disposition, reason
}

// Each of these new files makes a tool run code the operator never chose
// to run: GNU make preferring GNUmakefile or makefile over the existing
// Makefile, an IDE configuring CMake with the user's presets or an
// include(... OPTIONAL) the project already has, rust-analyzer running a
// Cargo.toml's build script (build = "any.rs" gets around build.rs),
// MSBuild importing Directory.Build.props, the editor's ESLint server
// importing eslint.config.js, irb, pry and R running their start-up
// files, Node.js loading a file of an existing install, every bazel
// command reading .bazelrc, and an .envrc sourcing a file after "&&".
// Each is asked about (disposition confirm) with a reason naming the
// program, not written unasked as a new file.
func TestCodePathsMoreAsk(t *testing.T) {
	h, root := openHost(t, nil)
	for i, tc := range cpmCases() {
		t.Run(tc.name, func(t *testing.T) {
			dir := fmt.Sprintf("case%02d", i)
			for rel, content := range tc.setup {
				mustWrite(t, filepath.Join(root, dir, rel), content)
			}
			disp, reason := cpmAsked(t, h, dir+"/"+tc.write, tc.content)
			t.Logf("%s: %s", disp, reason)
			if disp != engine.RequiresConfirmation {
				t.Fatalf("write_file %s: disposition %q, want %q (a tool runs code from it unasked)", tc.write, disp, engine.RequiresConfirmation)
			}
			if !strings.Contains(reason, tc.program) {
				t.Errorf("write_file %s: reason %q does not name %s", tc.write, reason, tc.program)
			}
			if exists(filepath.Join(root, dir, tc.write)) {
				t.Errorf("write_file %s wrote the file though it was denied", tc.write)
			}
		})
	}
}

// New source a person chooses to build is still written unasked: a new
// project's package.json, Makefile or CMakeLists.txt, a source file, a
// GNUmakefile in a directory with no other makefile, a .mk file nothing
// includes, and a file an .envrc only mentions.
func TestCodePathsMoreNewSourceUnasked(t *testing.T) {
	h, root := openHost(t, nil)
	for i, tc := range []struct {
		setup map[string]string
		write string
	}{
		{nil, "web/package.json"},
		{nil, "tool/Makefile"},
		{nil, "lib/CMakeLists.txt"},
		{nil, "src/main.rs"},
		{nil, "GNUmakefile"},
		{map[string]string{"Makefile": "-include local.mk\n"}, "other.mk"},
		{map[string]string{"CMakeLists.txt": "include(local.cmake)\n"}, "notes.cmake"},
		{map[string]string{".envrc": "echo see .envrc.local && export X=1\n"}, ".envrc.local"},
	} {
		dir := fmt.Sprintf("new%02d", i)
		for rel, content := range tc.setup {
			mustWrite(t, filepath.Join(root, dir, rel), content)
		}
		if disp, reason := cpmAsked(t, h, dir+"/"+tc.write, "x\n"); disp != engine.ExecuteNow {
			t.Errorf("write_file %s (%v): disposition %q (%s), want %q", tc.write, tc.setup, disp, reason, engine.ExecuteNow)
		}
	}
}

// The look for including files is bounded (64 files): past the bound it
// must ask, not let the file through. The padding is made unasked by the
// model itself: 70 new .mk files (each a new file nothing includes) in
// sub/, whose files were read before the directories above, then the
// file the root's Makefile includes from sub/, or one any of the 71
// files there could include.
func TestCodePathsMoreIncludePaddingAsks(t *testing.T) {
	h, root := openHost(t, bigBatches)
	mustWrite(t, filepath.Join(root, "Makefile"), "all:\n\t@true\n-include sub/extra.mk\n")
	for b := 0; b < 70; b += 35 {
		var calls []engine.Call
		for i := b; i < b+35; i++ {
			calls = append(calls, write(t, fmt.Sprint("j", i), fmt.Sprintf("sub/junk%02d.mk", i), "x = 1\n"))
		}
		for _, r := range runBatch(t, h, nil, calls...) {
			if !r.OK {
				t.Fatalf("padding junk .mk file was not written unasked: %+v", r.Error)
			}
		}
	}
	disp, reason := cpmAsked(t, h, "sub/extra.mk", "$(shell id > pwned)\n")
	if disp != engine.RequiresConfirmation || !strings.Contains(reason, "which Makefile includes") {
		t.Errorf("write_file sub/extra.mk past 70 padding files: disposition %q, reason %q; want confirm, naming the Makefile that includes it", disp, reason)
	}
	if exists(filepath.Join(root, "sub/extra.mk")) {
		t.Error("sub/extra.mk was written though it was denied")
	}
	// An includer among the padding may be past the bound, depending on
	// the order the directory lists them in: the write asks either way.
	mustWrite(t, filepath.Join(root, "sub/zz.mk"), "include more.mk\n")
	disp, reason = cpmAsked(t, h, "sub/more.mk", "$(shell id > pwned)\n")
	if disp != engine.RequiresConfirmation || !(strings.Contains(reason, "not all were read") || strings.Contains(reason, "zz.mk includes")) {
		t.Errorf("write_file sub/more.mk beside 71 .mk files: disposition %q, reason %q; want confirm, naming zz.mk or saying not all were read", disp, reason)
	}
	// A directory of few files is looked through whole: a new file
	// nothing includes there is still written unasked.
	if disp, reason := cpmAsked(t, h, "notes.mk", "x = 1\n"); disp != engine.ExecuteNow {
		t.Errorf("write_file notes.mk (nothing includes it, two makefiles above): disposition %q (%s), want execute", disp, reason)
	}
}

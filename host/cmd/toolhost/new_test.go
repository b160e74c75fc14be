package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// Go.mod's replace points into the checkout by a relative
// path when the plugin lives inside it, so the two move together, and by
// an absolute one otherwise.
func TestNewReplacePathForm(t *testing.T) {
	tests := []struct{ target, root, want string }{
		{"/src/toolhost/demo", "/src/toolhost", ".."},
		{"/src/toolhost/tools/demo", "/src/toolhost", "../.."},
		{"/home/me/demo", "/src/toolhost", "/src/toolhost"},
		{"/src/toolhost-other/demo", "/src/toolhost", "/src/toolhost"},
	}
	for _, tt := range tests {
		if got := replacePath(filepath.FromSlash(tt.target), filepath.FromSlash(tt.root)); got != tt.want {
			t.Errorf("replacePath(%s, %s) = %q, want %q", tt.target, tt.root, got, tt.want)
		}
	}
}

// Every template renders with the scaffold's parameters,
// names nothing it was not given, and the files land under their real names.
func TestNewTemplatesRender(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "word_count")
	p := newParams{Name: "word_count", GoVersion: "1.26.0", SDK: "/src/toolhost", Toolhost: "/src/toolhost/bin/toolhost"}
	if err := writeTemplates(dir, p); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"main.go":                `Name:         "word_count"`,
		"go.mod":                 "replace github.com/toolhost/toolhost => /src/toolhost",
		"Makefile":               "TOOLHOST ?= /src/toolhost/bin/toolhost",
		"README.md":              "# word_count",
		".gitignore":             "*.wasm",
		"conformance/count.json": `"tool": "word_count"`,
	}
	for name, text := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("scaffold lacks %s: %v", name, err)
			continue
		}
		if !strings.Contains(string(b), text) {
			t.Errorf("%s does not hold %q:\n%s", name, text, b)
		}
		if strings.Contains(string(b), "{{") {
			t.Errorf("%s holds an unrendered action:\n%s", name, b)
		}
	}
	if got := goModLine([]byte("module x\n\ngo 1.26.0\n"), "go"); got != "1.26.0" {
		t.Errorf("go directive %q", got)
	}
}

// A toolhost binary whose path holds a space,
// a $ or a # still runs from the scaffold's Makefile: make neither cuts
// the path at # nor expands $, and sh gets it as one word.
func TestNewMakefileOddToolhostPath(t *testing.T) {
	testenv.LookPath(t, "make", "apt-get install make (as root)")
	dir := filepath.Join(t.TempDir(), "odd")
	exe := "/opt/my tools/$HOME/it's #1/toolhost"
	p := newParams{Name: "odd", GoVersion: "1.26.0", SDK: goModPath("/src/my toolhost"), Toolhost: makeWord(exe)}
	if err := writeTemplates(dir, p); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-n", "test", "SHELL=/bin/sh")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n: %v\n%s", err, out)
	}
	// Run what make would run for toolhost, with echo in its place: sh
	// must see the whole path as one argument.
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(l, " test odd.wasm") {
			line = strings.TrimSuffix(l, " test odd.wasm")
		}
	}
	if line == "" {
		t.Fatalf("make -n test does not run toolhost test:\n%s", out)
	}
	got, err := exec.Command("sh", "-c", "printf %s "+line).Output()
	if err != nil || string(got) != exe {
		t.Errorf("the Makefile runs toolhost as %q (%v), want %q\n%s", got, err, exe, out)
	}
	if mod, _ := os.ReadFile(filepath.Join(dir, "go.mod")); !strings.Contains(string(mod), `=> "/src/my toolhost"`) {
		t.Errorf("go.mod does not quote the SDK path:\n%s", mod)
	}
}

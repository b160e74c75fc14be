package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestFindToolchains: installations behind a fake PATH, never $HOME or a
// directory holding a secret.
func TestFindToolchains(t *testing.T) {
	home := fakeHome(t)
	link := filepath.Join(t.TempDir(), "node-bin")
	if err := os.Symlink(filepath.Join(home, ".nvm/versions/node/v20/bin"), link); err != nil {
		t.Fatal(err)
	}
	got := findToolchains(fakePath(home)+":"+link, home, nil)
	want := []string{
		filepath.Join(home, ".pyenv"),
		filepath.Join(home, ".cargo/bin"), filepath.Join(home, ".rustup"),
		filepath.Join(home, "go"),
		filepath.Join(home, ".nvm/versions/node/v20"),
		filepath.Join(home, ".local/bin"),
		filepath.Join(home, "bin"),
	}
	if !slices.Equal(got.dirs, want) {
		t.Errorf("dirs:\n got %q\nwant %q", got.dirs, want)
	}
	if !slices.Equal(got.links, []string{link}) {
		t.Errorf("links = %q, want %q", got.links, link)
	}
	// CARGO_HOME and RUSTUP_HOME move Rust's homes.
	cargo, rustup := t.TempDir(), t.TempDir()
	mustMkdir(t, filepath.Join(cargo, "bin"))
	got = findToolchains(filepath.Join(cargo, "bin"), home, map[string]string{"CARGO_HOME": cargo, "RUSTUP_HOME": rustup})
	if want := []string{filepath.Join(cargo, "bin"), rustup}; !slices.Equal(got.dirs, want) {
		t.Errorf("with CARGO_HOME: %q, want %q", got.dirs, want)
	}
}

// TestDedupe: repeated entries go, the first of each stays in its place,
// and a list of the size a command can make (the nested repositories it
// plants in a root, five times the search's bound) takes far less than
// a second: dedupe was quadratic, 1.3 s for 20000 paths.
func TestDedupe(t *testing.T) {
	if got, want := dedupe([]string{"b", "a", "b", "c", "a"}), []string{"b", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("dedupe = %q, want %q", got, want)
	}
	if got := dedupe(nil); len(got) != 0 {
		t.Errorf("dedupe(nil) = %q", got)
	}
	const n = 5 * walkMaxEntries
	paths := make([]string, 0, n+1)
	for i := range n {
		paths = append(paths, fmt.Sprintf("/root/r%06d/.git", i))
	}
	paths = append(paths, paths[0])
	start := time.Now()
	got := dedupe(paths)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("dedupe of %d paths took %v, want it linear", len(paths), d)
	}
	if len(got) != n || got[0] != paths[0] || got[n-1] != paths[n-1] {
		t.Errorf("dedupe kept %d paths, want %d in their order", len(got), n)
	}
}

// TestRustupHome: without a home and RUSTUP_HOME, rustup's home is not
// known: "", never the relative ".rustup" that would name a directory of
// whatever directory toolhost runs in.
func TestRustupHome(t *testing.T) {
	tests := []struct {
		home string
		env  map[string]string
		want string
	}{
		{"/home/u", nil, "/home/u/.rustup"},
		{"/home/u", map[string]string{"RUSTUP_HOME": "/opt/rustup/"}, "/opt/rustup"},
		{"", map[string]string{"CARGO_HOME": "/opt/cargo"}, ""},
		{"", map[string]string{"CARGO_HOME": "/opt/cargo", "RUSTUP_HOME": "relative"}, ""},
	}
	for _, tt := range tests {
		if got := rustupHome(tt.home, tt.env); got != tt.want {
			t.Errorf("rustupHome(%q, %v) = %q, want %q", tt.home, tt.env, got, tt.want)
		}
	}
	// Through findToolchains: CARGO_HOME's bin on PATH, no home, run in a
	// directory holding a .rustup.
	cargo := t.TempDir()
	mustMkdir(t, filepath.Join(cargo, "bin"))
	cwd := t.TempDir()
	mustMkdir(t, filepath.Join(cwd, ".rustup"))
	t.Chdir(cwd)
	got := findToolchains(filepath.Join(cargo, "bin"), "", map[string]string{"CARGO_HOME": cargo})
	if want := []string{filepath.Join(cargo, "bin")}; !slices.Equal(got.dirs, want) {
		t.Errorf("dirs = %q, want %q", got.dirs, want)
	}
}

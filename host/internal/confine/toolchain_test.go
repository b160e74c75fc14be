package confine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFindToolchains: installations behind a fake PATH, never $HOME or a
// directory holding a secret (issue 14 item 2).
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

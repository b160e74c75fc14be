package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The configuration toolhost reads through a symbolic
// link is protected where the link leads, not only where it stands, so
// that a tool working in the directory of the target cannot rewrite the
// policy through a name no protected-name rule knows.
func TestProtectedPathsFollowLinks(t *testing.T) {
	const policy = "[tools.approval]\nmode = \"prompt\"\n"
	tests := []struct {
		name string
		// setup lays out files under base and returns the Options to load
		// with; base holds "user" (the user configuration directory),
		// "dotfiles" and "ws" (the working directory).
		setup   func(t *testing.T, base string) Options
		want    []string // relative to base
		notWant []string
	}{
		{
			name: "user file is an absolute link",
			setup: func(t *testing.T, base string) Options {
				write(t, base, "dotfiles/toolhost/config.toml", policy)
				link(t, base, filepath.Join(base, "dotfiles/toolhost/config.toml"), "user/toolhost.toml")
				return Options{}
			},
			want: []string{"user", "user/toolhost.toml", "dotfiles/toolhost/config.toml"},
		},
		{
			name: "user file is a relative link through a link",
			setup: func(t *testing.T, base string) Options {
				write(t, base, "dotfiles/toolhost/config.yaml", "tools:\n  approval:\n    mode: prompt\n")
				link(t, base, "../dotfiles/toolhost/config.yaml", "user/hop.yaml")
				link(t, base, "hop.yaml", "user/toolhost.yaml")
				return Options{}
			},
			want: []string{"user/toolhost.yaml", "dotfiles/toolhost/config.yaml"},
		},
		{
			name: "user file is a dangling link",
			setup: func(t *testing.T, base string) Options {
				mkdir(t, base, "dotfiles/toolhost")
				link(t, base, "../dotfiles/toolhost/later.toml", "user/toolhost.toml")
				return Options{}
			},
			want: []string{"user/toolhost.toml", "dotfiles/toolhost/later.toml"},
		},
		{
			name: "trust file is a link",
			setup: func(t *testing.T, base string) Options {
				write(t, base, "dotfiles/trust.toml", "directories = []\n")
				link(t, base, "../dotfiles/trust.toml", "user/trust.toml")
				return Options{}
			},
			want: []string{"user/trust.toml", "dotfiles/trust.toml"},
		},
		{
			name: "user directory is a link",
			setup: func(t *testing.T, base string) Options {
				write(t, base, "dotfiles/toolhost/toolhost.toml", policy)
				if err := os.Remove(filepath.Join(base, "user")); err != nil {
					t.Fatal(err)
				}
				link(t, base, "dotfiles/toolhost", "user")
				return Options{}
			},
			want: []string{"user", "dotfiles/toolhost", "dotfiles/toolhost/toolhost.toml", "dotfiles/toolhost/trust.toml"},
		},
		{
			name: "explicit file is a link, user file not read",
			setup: func(t *testing.T, base string) Options {
				write(t, base, "dotfiles/ops.toml", policy)
				link(t, base, "../dotfiles/ops.toml", "ws/ops.toml")
				write(t, base, "dotfiles/unused.toml", policy)
				link(t, base, "../dotfiles/unused.toml", "user/toolhost.toml")
				return Options{File: filepath.Join(base, "ws/ops.toml")}
			},
			want: []string{"ws/ops.toml", "dotfiles/ops.toml", "user/toolhost.toml", "dotfiles/unused.toml"},
		},
		{
			name: "trusted project file is a link in its directory",
			setup: func(t *testing.T, base string) Options {
				write(t, base, "ws/narrow.toml", policy)
				link(t, base, "narrow.toml", "ws/toolhost.toml")
				if _, err := Trust(filepath.Join(base, "user"), filepath.Join(base, "ws")); err != nil {
					t.Fatal(err)
				}
				return Options{}
			},
			want:    []string{"ws/narrow.toml"},
			notWant: []string{"ws/toolhost.toml"}, // readable, and refused writes by its name
		},
		{
			name: "ignored project file is a link out of its directory",
			setup: func(t *testing.T, base string) Options {
				write(t, base, "dotfiles/project.toml", policy)
				link(t, base, "../dotfiles/project.toml", "ws/toolhost.toml")
				return Options{}
			},
			want:    []string{"dotfiles/project.toml"},
			notWant: []string{"ws/toolhost.toml"},
		},
		{
			name: "project file is no link",
			setup: func(t *testing.T, base string) Options {
				write(t, base, "ws/toolhost.toml", policy)
				return Options{}
			},
			notWant: []string{"ws", "ws/toolhost.toml"},
		},
		{
			name: "project file is a link to its own directory",
			setup: func(t *testing.T, base string) Options {
				link(t, base, ".", "ws/toolhost.toml")
				return Options{}
			},
			notWant: []string{"ws", "ws/toolhost.toml"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mkdir(t, base, "user")
			mkdir(t, base, "ws")
			opts := tt.setup(t, base)
			opts.UserDir, opts.Dir = filepath.Join(base, "user"), filepath.Join(base, "ws")
			l, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			got := l.ProtectedPaths()
			for _, w := range tt.want {
				if p := filepath.Join(base, w); !slices.Contains(got, p) {
					t.Errorf("%s not protected; ProtectedPaths = %q", p, got)
				}
			}
			for _, w := range tt.notWant {
				if p := filepath.Join(base, w); slices.Contains(got, p) {
					t.Errorf("%s protected; ProtectedPaths = %q", p, got)
				}
			}
		})
	}
}

func write(t *testing.T, base, name, content string) {
	t.Helper()
	mkdir(t, base, filepath.Dir(name))
	writeFile(t, base, name, content)
}

func mkdir(t *testing.T, base, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(base, name), 0o755); err != nil {
		t.Fatal(err)
	}
}

// link makes base/name a symbolic link to target, written as given: a
// relative target is read relative to the link's directory.
func link(t *testing.T, base, target, name string) {
	t.Helper()
	mkdir(t, base, filepath.Dir(name))
	if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
}

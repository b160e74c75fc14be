package config

import (
	"os"
	"path/filepath"
)

// maxLinkHops bounds how many links a path is followed through, as the
// kernel bounds it (Linux's ELOOP limit is 40), so that a loop ends.
const maxLinkHops = 40

// ProtectedPaths are the paths no tool may read or write, so that the
// configuration cannot be rewritten by the tools it governs: the user configuration directory, the operator's files Load
// read or considered and the trust file, each as named and as the file its
// symbolic links reach; and for a project file (read or ignored, or one
// of the names Load would read in the working directory) the file its
// links reach. A link's target is listed even when it does not exist yet,
// and whatever its name: a sandbox that compares canonical paths sees only
// the target (~/dotfiles/toolhost/config.toml behind
// ~/.config/toolhost/toolhost.toml), which no protected-name rule knows.
// A project file's own path is left to that rule, which refuses writes to
// it at any depth but lets tools read it. Give the list to
// host.Options.Protected.
func (l *Loaded) ProtectedPaths() []string {
	var operator, project []string
	if l.userDir != "" {
		operator = append(operator, l.userDir)
		for _, name := range append(fileNames(), TrustFile) {
			operator = append(operator, filepath.Join(l.userDir, name))
		}
	}
	for _, f := range l.Files {
		if f.Role == RoleOperator {
			operator = append(operator, f.Path)
		} else {
			project = append(project, f.Path)
		}
	}
	if l.dir != "" {
		for _, name := range fileNames() {
			project = append(project, filepath.Join(l.dir, name))
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, p := range operator {
		add(p)
		add(reached(p))
	}
	for _, p := range project {
		// A project's "toolhost.toml -> ." must not put its whole root
		// out of reach: a configuration file that is a directory is never
		// read.
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			continue
		}
		if target := reached(p); target != p && target != realParent(p) {
			add(target)
		}
	}
	return out
}

// ProjectFileNames are the names of the configuration files Load reads
// from a directory: a project's, in its root.
func ProjectFileNames() []string { return fileNames() }

// fileNames are the names of the configuration files Load reads from a
// directory.
func fileNames() []string { return []string{"toolhost.toml", "toolhost.yaml", "toolhost.yml"} }

// reached is the path abs names once every symbolic link on the way is
// followed, or "" when that cannot be told (a loop, an unreadable link).
// Unlike filepath.EvalSymlinks it also follows a link whose target does
// not exist yet, returning that target: creating it would give the link
// content.
func reached(abs string) string {
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	p := abs
	for range maxLinkHops {
		fi, err := os.Lstat(p)
		if err != nil {
			return realParent(p) // the end of a dangling link, or no file at all
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return realParent(p)
		}
		target, err := os.Readlink(p)
		if err != nil {
			return ""
		}
		if !filepath.IsAbs(target) {
			// Relative to the link's real directory, as the kernel reads
			// it: ".." after a linked directory leaves its target.
			target = filepath.Join(realDir(filepath.Dir(p)), target)
		}
		p = filepath.Clean(target)
	}
	return ""
}

// realParent is p with its directory's links resolved.
func realParent(p string) string {
	return filepath.Join(realDir(filepath.Dir(p)), filepath.Base(p))
}

// realDir is dir with its links resolved, or dir as it is when it does
// not resolve.
func realDir(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}

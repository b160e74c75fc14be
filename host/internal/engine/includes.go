package engine

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// A new file that an existing build definition includes runs as that
// definition does: "-include local.mk" in a Makefile runs local.mk's
// recipes and $(shell) at the next make, a git config's include.path or
// includeIf path pulls settings (core.fsmonitor, aliases) into the next
// git status, a core.hooksPath directory's hooks run at the next commit,
// and an .envrc's source_env runs the file at the next cd. Creating one
// is changing what the including file runs, so it is never auto-approved
// as a new file.
//
// includedBy looks for such includers in each written file's directory,
// its immediate subdirectories (a sub-make's "-include ../common.mk") and
// every directory above it up to its root: Makefiles and *.mk files,
// .envrc, a .git/config there, and a .gitconfig or .config/git/config
// (a root holding a home). Its limits: an includer elsewhere is not seen
// (a Makefile in a sibling directory including ../other/x.mk), nor one
// past maxIncludeFiles read or maxIncludeSubdirs listed per call, nor
// what lies past maxIncludeBytes of a file; an include through a
// variable is matched as a wildcard.

// Bounds on looking for includers: the files read for one call, and the
// bytes read of each.
const (
	maxIncludeFiles   = 64
	maxIncludeSubdirs = 64
	maxIncludeBytes   = 64 << 10
	// maxSubIncludeBytes bounds what is read of a subdirectory's
	// includer: a sub-make includes its parent's rules near its top, and
	// a directory of many subdirectories must not cost a read of each
	// one's whole makefile.
	maxSubIncludeBytes = 8 << 10
)

// makefileNames are the files GNU make reads by itself.
var makefileNames = map[string]bool{"gnumakefile": true, "makefile": true}

// includedBy returns why one of paths (new files) is included by an
// existing file ("<path>, which <includer> includes (<line>)"), or "".
func includedBy(paths []sandbox.Path) string {
	read := 0
	checked := map[string]bool{}
	for _, p := range paths {
		if p.Root == nil || p.Rel == "." {
			continue
		}
		// The directories above first: their includers are the likelier,
		// and the bound on files read must not leave them out.
		var dirs []string
		for dir := path.Dir(p.Rel); ; dir = path.Dir(dir) {
			dirs = append(dirs, dir)
			if dir == "." {
				break
			}
		}
		above := len(dirs)
		dirs = append(dirs, subdirs(p.Root, path.Dir(p.Rel))...)
		for i, dir := range dirs {
			limit := int64(maxIncludeBytes)
			if i >= above {
				limit = maxSubIncludeBytes
			}
			for _, f := range includerFiles(p.Root, dir, i < above) {
				key := writeKey(p.RootDir, f.rel)
				if checked[key] {
					continue
				}
				checked[key] = true
				if read++; read > maxIncludeFiles {
					return ""
				}
				if line := f.includes(p.Root, p.Rel, limit); line != "" {
					return fmt.Sprintf("%s, which %s includes (%s)", p.Rel, f.rel, line)
				}
			}
		}
	}
	return ""
}

// subdirs returns up to maxIncludeSubdirs directories directly in dir
// (relative to r), .git left out; none when dir cannot be listed.
func subdirs(r *os.Root, dir string) []string {
	f, err := r.Open(filepath.FromSlash(dir))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	for n := 0; n < maxLinkScanEntries && len(out) < maxIncludeSubdirs; {
		batch, err := f.ReadDir(256)
		n += len(batch)
		for _, de := range batch {
			if de.IsDir() && de.Name() != ".git" && len(out) < maxIncludeSubdirs {
				out = append(out, path.Join(dir, de.Name()))
			}
		}
		if err != nil || len(batch) == 0 {
			break
		}
	}
	return out
}

// includer is a file that may include others, and how to read it.
type includer struct {
	rel  string // relative to the root
	kind includerKind
	// base is the directory its relative names are resolved against
	// (for a git config, the repository's top for core.hooksPath).
	base string
}

type includerKind int

const (
	makeFile includerKind = iota
	gitConfigFile
	envrcFile
)

// includerFiles lists the includers in dir (relative to r): its
// makefiles, and with all (not a subdirectory, where only a sub-make
// reaches up) its .envrc and git configs.
func includerFiles(r *os.Root, dir string, all bool) []includer {
	join := func(name string) string {
		if dir == "." {
			return name
		}
		return dir + "/" + name
	}
	var out []includer
	if f, err := r.Open(filepath.FromSlash(dir)); err == nil {
		for n := 0; n < maxLinkScanEntries; {
			batch, err := f.ReadDir(256)
			n += len(batch)
			for _, de := range batch {
				low := strings.ToLower(de.Name())
				if de.Type().IsRegular() && (makefileNames[low] || strings.HasSuffix(low, ".mk")) {
					out = append(out, includer{rel: join(de.Name()), kind: makeFile, base: dir})
				}
			}
			if err != nil || len(batch) == 0 {
				break
			}
		}
		f.Close()
	}
	if !all {
		return out
	}
	if regular(r, join(".envrc")) {
		out = append(out, includer{rel: join(".envrc"), kind: envrcFile, base: dir})
	}
	if regular(r, join(".git/config")) {
		out = append(out, includer{rel: join(".git/config"), kind: gitConfigFile, base: dir})
	}
	for _, name := range []string{".gitconfig", ".config/git/config"} {
		if regular(r, join(name)) {
			out = append(out, includer{rel: join(name), kind: gitConfigFile, base: dir})
		}
	}
	return out
}

// regular reports whether rel is a regular file (not through a link).
func regular(r *os.Root, rel string) bool {
	fi, err := r.Lstat(filepath.FromSlash(rel))
	return err == nil && fi.Mode().IsRegular()
}

// includes returns the line of f's first limit bytes that includes
// written (relative to the root), or "".
func (f includer) includes(r *os.Root, written string, limit int64) string {
	file, err := r.Open(filepath.FromSlash(f.rel))
	if err != nil {
		return ""
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, limit))
	if err != nil {
		return ""
	}
	switch f.kind {
	case makeFile:
		return makeIncludes(data, path.Dir(f.rel), written)
	case envrcFile:
		return envrcIncludes(data, f.base, written)
	}
	return gitIncludes(data, path.Dir(f.rel), f.base, written)
}

// makeIncludes finds an include, -include or sinclude line of a makefile
// in dir naming written. make resolves the names against the directory it
// runs in, which may be the makefile's or any above it (make -C, a
// parent's include), so each is tried; a variable reference matches as a
// wildcard.
func makeIncludes(data []byte, dir, written string) string {
	return eachLine(data, "include", func(line string) bool {
		if strings.HasPrefix(line, "\t") {
			return false // a recipe's line, run by the shell
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return false
		}
		switch fields[0] {
		case "include", "-include", "sinclude":
		default:
			return false
		}
		for _, name := range fields[1:] {
			for base := dir; ; base = path.Dir(base) {
				if nameMatches(base, wildVars(name), written) {
					return true
				}
				if base == "." {
					break
				}
			}
		}
		return false
	})
}

// wildVars replaces make's and the shell's variable references in name
// with a wildcard.
func wildVars(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		if name[i] != '$' || i+1 == len(name) {
			b.WriteByte(name[i])
			continue
		}
		if open := name[i+1]; open == '(' || open == '{' {
			closer := byte(')')
			if open == '{' {
				closer = '}'
			}
			if j := strings.IndexByte(name[i:], closer); j > 0 {
				b.WriteByte('*')
				i += j
				continue
			}
		}
		b.WriteByte('*') // $X
		i++
	}
	return b.String()
}

// envrcIncludes finds a line of an .envrc in dir that sources written,
// loads it as a dotenv (its variables can name programs: PATH,
// LD_PRELOAD, BASH_ENV), or puts its directory on PATH.
func envrcIncludes(data []byte, dir, written string) string {
	return eachLine(data, "", func(line string) bool {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return false
		}
		args := fields[1:]
		for i, a := range args {
			args[i] = strings.Trim(a, `"'`)
		}
		switch fields[0] {
		case "source_env", "source_env_if_exists", "source", ".":
		case "dotenv", "dotenv_if_exists":
			if len(args) == 0 {
				args = []string{".env"}
			}
		case "PATH_add":
			for _, a := range args {
				if nameMatches(dir, a+"/*", written) {
					return true
				}
			}
			return false
		default:
			return false
		}
		for _, a := range args {
			if nameMatches(dir, a, written) {
				return true
			}
		}
		return false
	})
}

// gitIncludes finds a line of a git config (in dir, for a repository or
// home whose top is top) that includes written (include.path,
// includeIf.*.path), makes it a hook (core.hooksPath names its
// directory), or names it as a program (core.fsmonitor, an alias's
// "!./script", any value naming a relative path).
func gitIncludes(data []byte, dir, top, written string) string {
	section := ""
	return eachLine(data, "", func(line string) bool {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			end := strings.IndexByte(t, ']')
			if end < 0 {
				return false
			}
			section = strings.ToLower(strings.Fields(strings.Trim(t[1:end], " \t") + " ")[0])
			if i := strings.IndexByte(section, '.'); i >= 0 {
				section = section[:i]
			}
			t = strings.TrimSpace(t[end+1:])
			if t == "" {
				return false
			}
		}
		key, value, ok := strings.Cut(t, "=")
		if !ok {
			return false
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.Trim(strings.TrimSpace(value), `"`)
		value = strings.TrimPrefix(value, ":(optional)")
		switch {
		case (section == "include" || section == "includeif") && key == "path":
			return nameMatches(dir, value, written)
		case section == "core" && key == "hookspath":
			return nameMatches(top, strings.TrimSuffix(value, "/")+"/*", written)
		}
		for _, word := range strings.Fields(value) {
			word = strings.Trim(strings.TrimPrefix(word, "!"), `"';`)
			if strings.HasPrefix(word, "./") || strings.HasPrefix(word, "../") {
				if nameMatches(top, word, written) {
					return true
				}
			}
		}
		return false
	})
}

// nameMatches reports whether name, resolved against dir (both relative
// to the root), is written or a glob matching it; case is ignored, as
// codeWrite's patterns ignore it. A name reaching above the root, or
// starting with ~ (a home), matches nothing.
func nameMatches(dir, name, written string) bool {
	if name == "" || strings.HasPrefix(name, "~") || path.IsAbs(name) {
		return false
	}
	full := path.Clean(path.Join(dir, name))
	if full == ".." || strings.HasPrefix(full, "../") {
		return false
	}
	full, written = strings.ToLower(full), strings.ToLower(written)
	if full == written {
		return true
	}
	ok, err := path.Match(full, written)
	return err == nil && ok
}

// eachLine calls match with each line of data that holds hint (every
// line, for an empty hint), and returns the first line it matches
// (trimmed, cut to 120 bytes and made visible, for a reason), or "".
// Comments (#, ;) are skipped. Lines without the hint cost a byte search.
func eachLine(data []byte, hint string, match func(line string) bool) string {
	h := []byte(hint)
	for len(data) > 0 {
		raw := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			raw, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(h) > 0 && !bytes.Contains(raw, h) {
			continue
		}
		line := string(raw)
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		if match(line) {
			if len(t) > 120 {
				t = strings.ToValidUTF8(t[:120], "") + "…"
			}
			return Visible(t)
		}
	}
	return ""
}

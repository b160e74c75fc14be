package engine

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// A new file that an existing build definition includes runs as that
// definition does: "-include local.mk" in a Makefile runs local.mk's
// recipes and $(shell) at the next make, CMake's include() and
// add_subdirectory() run the named file when an IDE configures the
// project on open, a git config's include.path or includeIf path pulls
// settings (core.fsmonitor, aliases) into the next git status, a
// core.hooksPath directory's hooks run at the next commit, and an
// .envrc's source_env runs the file at the next cd. A new GNUmakefile or
// makefile beside an existing Makefile is read by make in its place.
// Creating one is changing what the existing file runs, so it is never
// auto-approved as a new file.
//
// includedBy looks for such includers in each written file's directory,
// its immediate subdirectories (a sub-make's "-include ../common.mk", a
// subdirectory's CMakeLists.txt) and every directory above it up to its
// root: makefiles and *.mk files, CMakeLists.txt and *.cmake files,
// .envrc, a .git/config there, and a .gitconfig or .config/git/config (a
// root holding a home). It reads the likely includers first (the files
// the tools read by themselves: makefiles, CMakeLists.txt, .envrc, git
// configs), then the *.mk and *.cmake files, so that files a model
// creates cannot push the includer past the bound. Its limits: an
// includer elsewhere is not seen (a Makefile in a sibling directory
// including ../other/x.mk), nor what lies past maxIncludeBytes of a
// file; an include through a variable is matched as a wildcard. Past
// maxIncludeFiles includers, or maxIncludeSubdirs subdirectories, it
// does not know, and says so: the write is asked about.

// Bounds on looking for includers: the files read for one call, the
// subdirectories looked into, and the bytes read of each file.
const (
	maxIncludeFiles   = 64
	maxIncludeSubdirs = 256
	maxIncludeBytes   = 64 << 10
	// maxSubIncludeBytes bounds what is read of a subdirectory's
	// includer: a sub-make includes its parent's rules near its top, and
	// a directory of many subdirectories must not cost a read of each
	// one's whole makefile.
	maxSubIncludeBytes = 8 << 10
)

// makefileNames are the files GNU make reads by itself, in the order it
// looks for them.
var makefileNames = []string{"GNUmakefile", "makefile", "Makefile"}

// candidate is an includer to read, and the written paths (relative to
// its root) it may include.
type candidate struct {
	root    *os.Root
	f       includer
	limit   int64
	written []string
}

// includedBy returns why one of paths (new files) is, or may be,
// included by an existing file ("<path>, which <includer> includes
// (<line>)"), or "".
func includedBy(paths []sandbox.Path) string {
	// An includer is read once, for every written path it may include.
	type at struct {
		likely bool
		i      int
	}
	seen := map[string]at{}
	var likely, other []*candidate
	add := func(p sandbox.Path, fs []includer, limit int64, isLikely bool) {
		for _, f := range fs {
			key := writeKey(p.RootDir, f.rel)
			a, ok := seen[key]
			if !ok {
				to := &other
				if isLikely {
					to = &likely
				}
				a = at{isLikely, len(*to)}
				seen[key] = a
				*to = append(*to, &candidate{root: p.Root, f: f})
			}
			c := other
			if a.likely {
				c = likely
			}
			c[a.i].limit = max(c[a.i].limit, limit)
			c[a.i].written = append(c[a.i].written, p.Rel)
		}
	}
	looked := 0 // subdirectories looked into, for all paths
	for _, p := range paths {
		if p.Root == nil || p.Rel == "." {
			continue
		}
		if why := makeOverride(p); why != "" {
			return why
		}
		for dir := path.Dir(p.Rel); ; dir = path.Dir(dir) {
			named, listed := includerFiles(p.Root, dir)
			add(p, named, maxIncludeBytes, true)
			add(p, listed, maxIncludeBytes, false)
			if dir == "." {
				break
			}
		}
		subs, more := subdirs(p.Root, path.Dir(p.Rel), maxIncludeSubdirs-looked)
		looked += len(subs)
		if more {
			return fmt.Sprintf("%s, which a makefile or CMakeLists.txt in a subdirectory of %s could include, past the %d subdirectories looked into; not all were read",
				p.Rel, dirName(path.Dir(p.Rel)), maxIncludeSubdirs)
		}
		for _, sub := range subs {
			add(p, subIncluders(p.Root, sub), maxSubIncludeBytes, true)
		}
	}
	for i, c := range append(likely, other...) {
		if i == maxIncludeFiles {
			return fmt.Sprintf("%s, which more than %d files could include (makefiles, CMake files, .envrc, git configs); not all were read",
				c.written[0], maxIncludeFiles)
		}
		if written, line := c.f.includes(c.root, c.written, c.limit); line != "" {
			return fmt.Sprintf("%s, which %s includes (%s)", written, c.f.rel, line)
		}
	}
	return ""
}

// makeOverride says why p, a new GNUmakefile or makefile, replaces an
// existing makefile of its directory for make, which reads the first of
// makefileNames it finds; or "". (On a disk that ignores case, a new
// makefile beside a Makefile is no new file.)
func makeOverride(p sandbox.Path) string {
	i := slices.Index(makefileNames, path.Base(p.Rel))
	if i < 0 {
		return ""
	}
	dir := path.Dir(p.Rel)
	for _, name := range makefileNames[i+1:] {
		if rel := path.Join(dir, name); regular(p.Root, rel) {
			return fmt.Sprintf("%s, which GNU make reads instead of the existing %s", p.Rel, rel)
		}
	}
	return ""
}

// subdirs returns up to limit directories directly in dir (relative to
// r), .git left out, and whether there were more; none when dir cannot be
// listed.
func subdirs(r *os.Root, dir string, limit int) ([]string, bool) {
	f, err := r.Open(filepath.FromSlash(dir))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	var out []string
	for n := 0; n < maxLinkScanEntries; {
		batch, err := f.ReadDir(256)
		n += len(batch)
		for _, de := range batch {
			if de.IsDir() && de.Name() != ".git" {
				if len(out) >= limit {
					return out, true
				}
				out = append(out, path.Join(dir, de.Name()))
			}
		}
		if err != nil || len(batch) == 0 {
			break
		}
	}
	return out, false
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
	cmakeFile
	gitConfigFile
	envrcFile
)

// includerFiles returns the includers in dir (relative to r): named, the
// files tools read by themselves (its makefiles, CMakeLists.txt, .envrc
// and git configs), and listed, the *.mk and *.cmake files only another
// file's include reads.
func includerFiles(r *os.Root, dir string) (named, listed []includer) {
	join := func(name string) string { return path.Join(dir, name) }
	if f, err := r.Open(filepath.FromSlash(dir)); err == nil {
		for n := 0; n < maxLinkScanEntries; {
			batch, err := f.ReadDir(256)
			n += len(batch)
			for _, de := range batch {
				if !de.Type().IsRegular() {
					continue
				}
				low := strings.ToLower(de.Name())
				switch {
				case low == "gnumakefile" || low == "makefile":
					named = append(named, includer{rel: join(de.Name()), kind: makeFile, base: dir})
				case low == "cmakelists.txt":
					named = append(named, includer{rel: join(de.Name()), kind: cmakeFile, base: dir})
				case strings.HasSuffix(low, ".mk"):
					listed = append(listed, includer{rel: join(de.Name()), kind: makeFile, base: dir})
				case strings.HasSuffix(low, ".cmake"):
					listed = append(listed, includer{rel: join(de.Name()), kind: cmakeFile, base: dir})
				}
			}
			if err != nil || len(batch) == 0 {
				break
			}
		}
		f.Close()
	}
	if regular(r, join(".envrc")) {
		named = append(named, includer{rel: join(".envrc"), kind: envrcFile, base: dir})
	}
	for _, name := range []string{".git/config", ".gitconfig", ".config/git/config"} {
		if regular(r, join(name)) {
			named = append(named, includer{rel: join(name), kind: gitConfigFile, base: dir})
		}
	}
	return named, listed
}

// subIncluders returns the includers of a subdirectory that reach up:
// its makefiles (a sub-make's "include ../common.mk") and CMakeLists.txt
// (an "include(../x.cmake)"). Looking them up by name costs a few Lstat
// calls, where listing every subdirectory would cost a read of each.
func subIncluders(r *os.Root, dir string) []includer {
	sub, err := r.OpenRoot(filepath.FromSlash(dir))
	if err != nil {
		return nil
	}
	defer sub.Close()
	var out []includer
	for _, name := range append(makefileNames, "CMakeLists.txt") {
		rel := path.Join(dir, name)
		if !regular(sub, name) {
			continue
		}
		kind := makeFile
		if name == "CMakeLists.txt" {
			kind = cmakeFile
		}
		out = append(out, includer{rel: rel, kind: kind, base: dir})
	}
	return out
}

// regular reports whether rel is a regular file (not through a link).
func regular(r *os.Root, rel string) bool {
	fi, err := r.Lstat(filepath.FromSlash(rel))
	return err == nil && fi.Mode().IsRegular()
}

// includes returns the first of written (relative to the root) that f's
// first limit bytes include, and the line that does, or "", "".
func (f includer) includes(r *os.Root, written []string, limit int64) (string, string) {
	file, err := r.Open(filepath.FromSlash(f.rel))
	if err != nil {
		return "", ""
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, limit))
	if err != nil {
		return "", ""
	}
	for _, w := range written {
		var line string
		switch f.kind {
		case makeFile:
			line = makeIncludes(data, path.Dir(f.rel), w)
		case cmakeFile:
			line = cmakeIncludes(data, path.Dir(f.rel), w)
		case envrcFile:
			line = envrcIncludes(data, f.base, w)
		default:
			line = gitIncludes(data, path.Dir(f.rel), f.base, w)
		}
		if line != "" {
			return w, line
		}
	}
	return "", ""
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
// LD_PRELOAD, BASH_ENV), or puts its directory on PATH. The command may
// be anywhere on the line: after "&&", "||", ";", "|", "then", "do" or
// inside braces, as in "[ -f .envrc.local ] && source .envrc.local".
func envrcIncludes(data []byte, dir, written string) string {
	return eachLine(data, "", func(line string) bool {
		for _, cmd := range shellCommands(line) {
			if envrcCommandIncludes(cmd, dir, written) {
				return true
			}
		}
		return false
	})
}

// shellCommands splits a line of shell into its simple commands' words,
// the keywords and "!" that may start one dropped. Quotes are stripped
// from words, not parsed: a separator inside quotes splits too, which
// errs on the side of finding an include.
func shellCommands(line string) [][]string {
	for _, sep := range []string{"&&", "||", "$(", ";", "|", "&", "(", ")", "{", "}", "`"} {
		line = strings.ReplaceAll(line, sep, "\n")
	}
	var out [][]string
	for _, part := range strings.Split(line, "\n") {
		fields := strings.Fields(part)
		for len(fields) > 0 {
			switch fields[0] {
			case "then", "else", "elif", "do", "if", "while", "until", "!", "command", "builtin", "exec", "time":
				fields = fields[1:]
				continue
			}
			break
		}
		if len(fields) > 0 {
			out = append(out, fields)
		}
	}
	return out
}

// envrcCommandIncludes reports whether the command fields (of an .envrc
// in dir) source, load or put on PATH written.
func envrcCommandIncludes(fields []string, dir, written string) bool {
	args := slices.Clone(fields[1:])
	for i, a := range args {
		args[i] = strings.Trim(a, `"'`)
	}
	switch fields[0] {
	case "source_env", "source_env_if_exists", "source", ".":
	case "dotenv", "dotenv_if_exists":
		if len(args) == 0 {
			args = []string{".env"}
		}
	case "PATH_add", "path_add":
		if fields[0] == "path_add" && len(args) > 0 {
			args = args[1:] // path_add VARIABLE DIR...
		}
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
}

// cmakeCommand is a CMake include() or add_subdirectory() call: the
// command name (case ignored, as CMake ignores it) and its arguments,
// which may span lines.
var cmakeCommand = regexp.MustCompile(`(?im)^[ \t]*(include|add_subdirectory)[ \t]*\(([^)]*)\)`)

// cmakeVarDirs are the variables naming a source directory that
// include() and add_subdirectory() arguments start with: the name after
// them is tried against every directory from the file's up, as a
// relative name is.
var cmakeVarDirs = []string{
	"${cmake_current_source_dir}/", "${cmake_current_list_dir}/", "${cmake_source_dir}/",
	"${project_source_dir}/", "${cmake_home_directory}/",
}

// cmakeIncludes finds an include() or add_subdirectory() of a CMake file
// in dir that runs written. include() resolves a relative name against
// the directory being configured, which is the file's or one above it
// (a *.cmake file included from above), so each is tried; a module name
// (no slash, no .cmake) is looked for in CMAKE_MODULE_PATH, so it
// matches a file of that name anywhere. add_subdirectory(sub) runs
// sub/CMakeLists.txt. A variable reference matches as a wildcard.
func cmakeIncludes(data []byte, dir, written string) string {
	for _, m := range cmakeCommand.FindAllSubmatchIndex(data, -1) {
		args := strings.Fields(string(data[m[4]:m[5]]))
		if len(args) == 0 {
			continue
		}
		name := strings.Trim(args[0], `"`)
		low := strings.ToLower(name)
		for _, v := range cmakeVarDirs {
			if strings.HasPrefix(low, v) {
				name = name[len(v):]
				break
			}
		}
		name = wildVars(name)
		if strings.EqualFold(string(data[m[2]:m[3]]), "add_subdirectory") {
			name = path.Join(name, "CMakeLists.txt")
		} else if !strings.Contains(name, "/") && !strings.HasSuffix(strings.ToLower(name), ".cmake") {
			if strings.EqualFold(path.Base(written), name+".cmake") {
				return cmakeLine(data[m[0]:m[1]])
			}
			continue
		}
		for base := dir; ; base = path.Dir(base) {
			if nameMatches(base, name, written) {
				return cmakeLine(data[m[0]:m[1]])
			}
			if base == "." {
				break
			}
		}
	}
	return ""
}

// cmakeLine is a CMake command as a reason shows it: on one line, cut to
// 120 bytes and made visible.
func cmakeLine(cmd []byte) string {
	return reasonLine(strings.Join(strings.Fields(string(cmd)), " "))
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
			return reasonLine(t)
		}
	}
	return ""
}

// reasonLine is a line of an including file as a reason shows it: cut to
// 120 bytes and made visible.
func reasonLine(t string) string {
	if len(t) > 120 {
		t = strings.ToValidUTF8(t[:120], "") + "…"
	}
	return Visible(t)
}

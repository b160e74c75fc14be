// Package pin reads and writes toolhost.lock, the list of plugin modules an
// operator trusts, each with the SHA-256 of its bytes.
// When a plugin directory holds a lock, the host serves only the modules it
// lists, and only while their bytes hash as listed.
//
// pin never reads a module itself: callers hand Check the bytes they are
// about to compile, so no file can change between the check and its use.
package pin

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FileName is the lock's name in its plugin directory.
const FileName = "toolhost.lock"

// header opens every lock file written.
const header = `# toolhost.lock — SHA-256 of each trusted plugin; serve, call and batch refuse any other.
# Regenerate with ` + "`toolhost lock`" + ` after reviewing a changed plugin.
`

// Entry pins one module.
type Entry struct {
	// Path is the module's file relative to the plugin directory,
	// slash-separated: "read_file.wasm", "hyper/plugin.wasm".
	Path string
	// SHA256 is the hash of its bytes, 64 lowercase hex digits.
	SHA256 string
}

// Lock is a parsed lock file. It is immutable and safe for concurrent use.
type Lock struct {
	file string            // where it was read, for messages
	sums map[string]string // Entry.Path → Entry.SHA256
}

// Sum returns the SHA-256 of data as the lock writes it.
func Sum(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Read reads the lock at path. A plugin directory without a lock pins
// nothing: when path does not exist, Read returns a nil *Lock and no error,
// and the caller serves whatever the directory holds. Any other failure,
// including a malformed line, is an error naming the file (and the line).
func Read(path string) (*Lock, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plugin lock: %w", err)
	}
	return Parse(path, bytes.NewReader(data))
}

// Parse reads a lock from r; file names it in errors.
func Parse(file string, r io.Reader) (*Lock, error) {
	l := &Lock{file: file, sums: map[string]string{}}
	lines := map[string]int{} // Entry.Path → the line listing it
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSuffix(sc.Text(), "\r")
		if n == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // an editor's byte order mark
		}
		if strings.TrimSpace(text) == "" || strings.HasPrefix(text, "#") {
			continue
		}
		e, err := parseLine(text)
		if err != nil {
			return nil, &ParseError{File: file, Line: n, Err: err}
		}
		if first, dup := lines[e.Path]; dup {
			return nil, &ParseError{File: file, Line: n, Err: fmt.Errorf("%s is listed twice (first on line %d)", e.Path, first)}
		}
		lines[e.Path] = n
		l.sums[e.Path] = e.SHA256
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("plugin lock %s: %w", file, err)
	}
	return l, nil
}

// parseLine reads `<64 lowercase hex>  <path>`.
func parseLine(text string) (Entry, error) {
	sum, rel, ok := strings.Cut(text, "  ")
	if !ok {
		return Entry{}, errors.New("want `<SHA-256 in 64 lowercase hex digits>  <path relative to the plugin directory>` (two spaces between)")
	}
	e := Entry{Path: rel, SHA256: sum}
	return e, e.validate()
}

func (e Entry) validate() error {
	if len(e.SHA256) != sha256.Size*2 || strings.Trim(e.SHA256, "0123456789abcdef") != "" {
		return fmt.Errorf("%q is not a SHA-256 in 64 lowercase hex digits", e.SHA256)
	}
	return validPath(e.Path)
}

// validPath accepts a clean, relative, slash-separated path that stays in
// the plugin directory: a lock must not vouch for a module elsewhere.
func validPath(rel string) error {
	switch {
	case rel == "":
		return errors.New("the path is empty")
	case !utf8.ValidString(rel) || strings.IndexFunc(rel, unicode.IsControl) >= 0:
		// A newline in a file's name would write a line of its
		// choosing into the lock: a hash pinned for a module not
		// yet there.
		return fmt.Errorf("path %q holds a control character or invalid UTF-8; rename the file", rel)
	case strings.TrimSpace(rel) != rel:
		return fmt.Errorf("path %q has leading or trailing spaces", rel)
	case strings.Contains(rel, `\`):
		return fmt.Errorf("path %q must use / as its separator", rel)
	case path.IsAbs(rel) || filepath.IsAbs(rel):
		return fmt.Errorf("path %q is absolute; paths are relative to the plugin directory", rel)
	case rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "/../") || strings.HasSuffix(rel, "/.."):
		return fmt.Errorf("path %q leaves the plugin directory", rel)
	case path.Clean(rel) != rel:
		return fmt.Errorf("path %q is not clean (write %q)", rel, path.Clean(rel))
	}
	return nil
}

// File returns the file the lock was read from.
func (l *Lock) File() string { return l.file }

// Entries returns the pinned modules, sorted by path.
func (l *Lock) Entries() []Entry {
	out := make([]Entry, 0, len(l.sums))
	for p, s := range l.sums {
		out = append(out, Entry{Path: p, SHA256: s})
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Check accepts data as the module at rel (slash-separated, relative to
// the plugin directory) only if the lock lists rel with data's hash. It
// returns a *MismatchError or an *UnlistedError otherwise.
func (l *Lock) Check(rel string, data []byte) error {
	got := Sum(data)
	want, ok := l.sums[rel]
	switch {
	case !ok:
		return &UnlistedError{Lock: l.file, Plugin: rel, Got: got}
	case got != want:
		return &MismatchError{Lock: l.file, Plugin: rel, Got: got, Want: want}
	}
	return nil
}

// Write writes entries as the lock at path, sorted by path, through a
// temporary file renamed over it, so a reader sees the old lock or the new
// one, never part of one.
func Write(path string, entries []Entry) error {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	var b strings.Builder
	b.WriteString(header)
	for i, e := range sorted {
		if err := e.validate(); err != nil {
			return fmt.Errorf("plugin lock %s: entry %s: %w", path, e.Path, err)
		}
		if i > 0 && sorted[i-1].Path == e.Path {
			return fmt.Errorf("plugin lock %s: %s is listed twice", path, e.Path)
		}
		fmt.Fprintf(&b, "%s  %s\n", e.SHA256, e.Path)
	}
	if err := writeAtomic(path, []byte(b.String())); err != nil {
		return fmt.Errorf("plugin lock: %w", err)
	}
	return nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ParseError is a malformed lock line.
type ParseError struct {
	File string
	Line int
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("plugin lock %s:%d: %v; fix the line, or delete the file and run toolhost lock after reviewing the plugins", e.File, e.Line, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// MismatchError is a module whose bytes differ from the ones locked.
type MismatchError struct {
	Lock, Plugin string // the lock file; the module, relative to the plugin directory
	Got, Want    string // SHA-256 of the module found; of the module locked
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("plugin %s: SHA-256 %s differs from %s's %s; review the changed plugin and run toolhost lock, or restore the locked file",
		e.Plugin, e.Got, e.Lock, e.Want)
}

// UnlistedError is a module the lock does not list.
type UnlistedError struct {
	Lock, Plugin string
	Got          string // SHA-256 of the module found
}

func (e *UnlistedError) Error() string {
	return fmt.Sprintf("plugin %s (SHA-256 %s) is not listed in %s; review it and run toolhost lock to trust it, or remove it from the plugin directory",
		e.Plugin, e.Got, e.Lock)
}

package main

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"text/template"

	"github.com/spf13/cobra"
)

// newTemplates is the plugin `toolhost new` writes: each file's path under
// templates/new, less ".tmpl" (gitignore becomes .gitignore).
//
//go:embed templates/new
var newTemplates embed.FS

// sdkModule is the module path the scaffold's go.mod requires.
const sdkModule = "github.com/toolhost/toolhost"

// toolName is a manifest's name pattern (abi/README.md): a scaffold's tool,
// module and directory all take the name.
var toolName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// newParams fill the templates.
type newParams struct {
	Name      string
	GoVersion string // the SDK module's go directive
	SDK       string // the replace target: the toolhost checkout
	Toolhost  string // the toolhost command the Makefile runs
}

// newNewCommand scaffolds a plugin: a Go tool on the SDK
// that builds and passes `toolhost test` as it is.
func newNewCommand(g *globals) *cobra.Command {
	var dir, sdk string
	cmd := &cobra.Command{
		Use:   "new NAME",
		Short: "Create a plugin in ./NAME: a Go tool on toolhost's SDK, a Makefile and a conformance case",
		Long: `Create a plugin whose one tool is NAME, in ./NAME (or --dir): main.go, a tool
that counts the words of a file, written on toolhost's SDK; go.mod; a Makefile
whose "make" builds NAME.wasm and whose "make test" runs toolhost test on it;
conformance/count.json, the tool's own test case; and a README.

The SDK is not published as a module: go.mod takes it from a toolhost
checkout with a replace directive. That checkout is --sdk, else the one
enclosing the new directory, else the one this toolhost binary was built from.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("new takes exactly one plugin name, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			plugins, err := g.pluginDir()
			if err != nil {
				return err
			}
			target, err := scaffold(args[0], dir, sdk, plugins)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "created %s: cd there, run make to build %s.wasm and make test to test it\n", target, args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory to create the plugin in (default: ./NAME); it must not exist or be empty")
	cmd.Flags().StringVar(&sdk, "sdk", "", "toolhost checkout whose sdk/ the plugin builds on (default: the one enclosing --dir, else the one toolhost was built from)")
	return cmd
}

// scaffold writes the plugin name into dir (default ./name) and returns
// the directory's absolute path. plugins is the plugin directory the
// host loads, which the scaffold must stay out of.
func scaffold(name, dir, sdk, plugins string) (string, error) {
	if !toolName.MatchString(name) {
		return "", usageErrorf("new: %q is not a tool name: use 1 to 64 lower-case letters, digits and underscores, starting with a letter (for example word_count)", name)
	}
	if dir == "" {
		dir = name
	}
	target, err := filepath.Abs(dir)
	if err != nil {
		return "", usageErrorf("new: --dir %s: %v", dir, err)
	}
	if err := checkEmpty(target); err != nil {
		return "", err
	}
	if err := outsidePlugins(target, plugins); err != nil {
		return "", err
	}
	root, err := findSDK(sdk, target)
	if err != nil {
		return "", err
	}
	goVersion, err := goDirective(root)
	if err != nil {
		return "", err
	}
	p := newParams{Name: name, GoVersion: goVersion, SDK: goModPath(replacePath(target, root)), Toolhost: makeWord(toolhostCommand())}
	if err := writeTemplates(target, p); err != nil {
		return "", fmt.Errorf("new: %w", err)
	}
	return target, nil
}

// checkEmpty refuses a target that holds anything: a scaffold never
// overwrites a file. A symbolic link is refused too, even to an empty
// directory: the files would land where the link points, not where the
// user looks.
func checkEmpty(target string) error {
	if info, err := os.Lstat(target); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		dest, _ := os.Readlink(target)
		return usageErrorf("new: %s is a symbolic link (to %s); give the real directory with --dir, so the plugin lands where you see it", target, dest)
	}
	entries, err := os.ReadDir(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return usageErrorf("new: %s exists and cannot be listed (%v); choose another --dir", target, err)
	case len(entries) > 0:
		return usageErrorf("new: %s exists and is not empty; choose another name or --dir, or remove it", target)
	}
	return nil
}

// outsidePlugins refuses a target inside the plugin directory: the host
// loads every module there, and one in a folder of its own too, so a
// scaffold's build would be served before it was ever tested. Symbolic links are resolved on both sides.
func outsidePlugins(target, plugins string) error {
	if plugins == "" {
		return nil
	}
	abs, err := filepath.Abs(plugins)
	if err != nil {
		return nil
	}
	dir, real := resolvePrefix(target), resolvePrefix(abs)
	if dir == real || strings.HasPrefix(dir, real+string(filepath.Separator)) {
		return usageErrorf("new: %s is inside the plugin directory %s, whose every module toolhost serves: create the plugin elsewhere (--dir), and copy its .wasm there once toolhost test passes", target, abs)
	}
	return nil
}

// resolvePrefix resolves the symbolic links of the longest part of path
// that exists, and appends the rest.
func resolvePrefix(path string) string {
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		if p == filepath.Dir(p) {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// findSDK returns the toolhost checkout the plugin builds on: --sdk, else
// the module enclosing target, else the source tree this binary was built
// from (recorded in the binary unless it was built with -trimpath).
func findSDK(flag, target string) (string, error) {
	if flag != "" {
		root, err := filepath.Abs(flag)
		if err == nil {
			err = isSDK(root)
		}
		if err != nil {
			return "", usageErrorf("new: --sdk %s: %v", flag, err)
		}
		return root, nil
	}
	for dir := filepath.Dir(target); ; dir = filepath.Dir(dir) {
		if isSDK(dir) == nil {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if root, ok := builtFrom(); ok {
		return root, nil
	}
	return "", usageErrorf("new: no toolhost checkout to take the SDK from: the new directory is not inside one, and this binary does not record its sources; pass --sdk with the path of a toolhost clone")
}

// builtFrom is the module root this file was compiled in, if it still
// holds toolhost's sources.
func builtFrom() (string, bool) {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", false
	}
	root := filepath.Join(filepath.Dir(file), "..", "..", "..") // host/cmd/toolhost/new.go
	return root, isSDK(root) == nil
}

// isSDK reports why dir is not a toolhost checkout, or nil.
func isSDK(dir string) error {
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return fmt.Errorf("not a toolhost checkout: %w", err)
	}
	if modulePath(mod) != sdkModule {
		return fmt.Errorf("not a toolhost checkout: its go.mod is not module %s", sdkModule)
	}
	if _, err := os.Stat(filepath.Join(dir, "sdk", "tool.go")); err != nil {
		return fmt.Errorf("toolhost checkout without its SDK: %w", err)
	}
	return nil
}

// modulePath and goDirective read the two go.mod lines they need; a full
// go.mod parser is not worth a dependency here.
func modulePath(mod []byte) string { return goModLine(mod, "module") }

func goDirective(root string) (string, error) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("new: %w", err)
	}
	v := goModLine(mod, "go")
	if v == "" {
		return "", fmt.Errorf("new: %s has no go directive", filepath.Join(root, "go.mod"))
	}
	return v, nil
}

func goModLine(mod []byte, directive string) string {
	s := bufio.NewScanner(bytes.NewReader(mod))
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 2 && fields[0] == directive {
			return strings.Trim(fields[1], `"`)
		}
	}
	return ""
}

// replacePath is root as go.mod's replace names it: relative (../..) when
// the plugin lives inside the checkout, so that the two move together,
// else absolute.
func replacePath(target, root string) string {
	rel, err := filepath.Rel(target, root)
	if err != nil {
		return filepath.ToSlash(root)
	}
	for _, elem := range strings.Split(filepath.ToSlash(rel), "/") {
		if elem != ".." {
			return filepath.ToSlash(root)
		}
	}
	return filepath.ToSlash(rel)
}

// goModPath is path as a go.mod token: quoted when it holds anything
// but the characters of a plain path (a space would end the token and
// break the replace line).
func goModPath(path string) string {
	if plainPath.MatchString(path) {
		return path
	}
	return strconv.Quote(path)
}

var plainPath = regexp.MustCompile(`^[A-Za-z0-9/._~+@:-]+$`)

// makeWord is s as one word of a Makefile recipe run by sh: as is when
// plain, else single-quoted for sh, with make's own $ and # escaped so
// that make neither expands nor cuts it.
func makeWord(s string) string {
	if plainPath.MatchString(s) {
		return s
	}
	q := "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	q = strings.ReplaceAll(q, "$", "$$")
	return strings.ReplaceAll(q, "#", `\#`)
}

// toolhostCommand is how the Makefile runs toolhost: by name when this
// binary is the one on $PATH, else by its absolute path.
func toolhostCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return "toolhost"
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	if onPath, err := exec.LookPath("toolhost"); err == nil {
		if resolved, err := filepath.EvalSymlinks(onPath); err == nil && resolved == exe {
			return "toolhost"
		}
	}
	return exe
}

// writeTemplates creates target and renders every template into it.
func writeTemplates(target string, p newParams) error {
	const base = "templates/new"
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	return fs.WalkDir(newTemplates, base, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == base {
			return err
		}
		rel := strings.TrimPrefix(path, base+"/")
		out := filepath.Join(target, filepath.FromSlash(outputName(rel)))
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		text, err := newTemplates.ReadFile(path)
		if err != nil {
			return err
		}
		t, err := template.New(rel).Option("missingkey=error").Parse(string(text))
		if err != nil {
			return fmt.Errorf("template %s: %w", rel, err)
		}
		var b bytes.Buffer
		if err := t.Execute(&b, p); err != nil {
			return fmt.Errorf("template %s: %w", rel, err)
		}
		// O_EXCL: a file that appeared since checkEmpty is never
		// overwritten.
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(b.Bytes()); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
}

// outputName maps a template's name to the file it becomes. Files that
// would mean something to Go or git inside this repository (go.mod,
// .gitignore) are stored under other names.
func outputName(rel string) string {
	rel = strings.TrimSuffix(rel, ".tmpl")
	if rel == "gitignore" {
		return ".gitignore"
	}
	return rel
}

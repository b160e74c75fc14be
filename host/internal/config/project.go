package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/spf13/viper"
)

// project applies the project files in opts.Dir, if there are any and
// the operator trusted the directory, as narrowings of l.Config;
// otherwise it records each file as ignored and why. Only a broken trust
// file is an error: it is the operator's. A project file can be written
// by the tools this configuration governs, so nothing in it may stop
// toolhost.
//
// A directory may hold more than one project file (toolhost.toml and
// toolhost.yaml, say): each is applied in turn, in configFiles' order. A
// file can only narrow, so applying them all is at least as strict as
// any one of them; ignoring them all would let a command that adds a
// second file beside the project's undo its narrowing.
// A file that is broken, a link out of the directory, or that would make
// the policy invalid is ignored on its own, and the others still narrow:
// stopping toolhost instead would let any command stop it, and dropping
// the others would let a broken file undo them.
func (l *Loaded) project(opts Options, operator string) error {
	if sameFile(opts.Dir, opts.UserDir) {
		return nil // the operator's own directory holds no project file
	}
	var found []string
	for _, f := range configFiles(opts.Dir) {
		if !sameFile(f, operator) {
			found = append(found, f)
		}
	}
	if len(found) == 0 {
		return nil
	}
	dir := filepath.Dir(found[0])
	also := ""
	if len(found) > 1 {
		also = fmt.Sprintf(" (%s holds more than one configuration file, %s: in a trusted directory each one read narrows the policy in turn)", dir, strings.Join(found, ", "))
	}
	trusted, checked := false, false
	for _, file := range found {
		if target := linkOutside(file); target != "" {
			l.ignore(file, fmt.Sprintf("project file is a link to %s, outside %s: a tool writing that file would change the policy; replace the link with the file itself, or pass the target with --config to apply it in full%s", target, dir, also))
			continue
		}
		if !checked {
			var err error
			if trusted, err = IsTrusted(opts.UserDir, dir); err != nil {
				return err
			}
			checked = true
		}
		if !trusted {
			l.ignore(file, fmt.Sprintf("project file in an untrusted directory; run \"toolhost trust %s\" to let it narrow the policy, or pass it with --config to apply it in full%s", dir, also))
			continue
		}
		l.narrowBy(file, also)
	}
	return nil
}

// narrowBy applies the trusted project file as a narrowing of l.Config,
// or records why it is ignored; also is appended to that reason.
func (l *Loaded) narrowBy(file, also string) {
	p, err := l.readProject(file)
	if err != nil {
		l.ignore(file, fmt.Sprintf("%v; fix the file to let it narrow the policy%s", err, also))
		return
	}
	narrowed, ignored := l.Config.NarrowedBy(p)
	if err := narrowed.Validate(); err != nil {
		l.ignore(file, fmt.Sprintf("narrowed by it, the policy would be invalid: %v%s", err, also))
		return
	}
	before, after := showValues(l.Config), showValues(narrowed)
	for key, val := range after {
		if !reflect.DeepEqual(before[key], val) {
			l.Sources[key] = "project file " + file
		}
	}
	for _, s := range ignored {
		l.Ignored = append(l.Ignored, file+": "+s)
	}
	l.Files = append(l.Files, File{Path: file, Role: RoleProject, Read: true})
	l.Config = narrowed
}

// linkOutside is where a project file that is a symbolic link leads
// outside its own directory: the first link on the way, or the file at
// the end, that lies elsewhere. "" when file is no link or every step stays
// in the directory. A file elsewhere has a name no protected-name rule
// knows, so a tool could rewrite the project's narrowing through it.
func linkOutside(file string) string {
	dir := realDir(filepath.Dir(file))
	p := file
	for range maxLinkHops {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return ""
		}
		target, err := os.Readlink(p)
		if err != nil {
			return p // unreadable: cannot tell where it leads
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(realDir(filepath.Dir(p)), target)
		}
		p = filepath.Clean(target)
		if realDir(filepath.Dir(p)) != dir {
			return p
		}
	}
	return p // a loop, which configFiles would not have found
}

func (l *Loaded) ignore(file, why string) {
	l.Files = append(l.Files, File{Path: file, Role: RoleProject, Why: why})
}

// readProject is the operator's configuration with the project file's
// keys laid over it, so that keys the file does not set narrow nothing.
// Its relative roots are relative to the file.
func (l *Loaded) readProject(file string) (*Config, error) {
	v := viper.New()
	for key, val := range showValues(l.Config) {
		v.SetDefault(key, val)
	}
	scratch := &Loaded{Sources: map[string]string{}}
	defs, err := scratch.readFile(v, file, "project file ")
	if err != nil {
		return nil, err
	}
	if defs == nil {
		defs = l.Config.Tools.Definitions
	}
	p, err := decode(v, defs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	p.Extism = l.Config.Extism
	if scratch.extism != nil {
		p.Extism = scratch.extism
	}
	if err := absRoots(p.Tools.Sandbox.AllowedRoots, filepath.Dir(file)); err != nil {
		return nil, &KeyError{Key: "tools.sandbox.allowed_roots", Source: file, Err: err}
	}
	if err := p.Validate(); err != nil {
		var ke *KeyError
		if errors.As(err, &ke) && ke.Source == "" {
			ke.Source = file
		}
		return nil, err
	}
	return p, nil
}

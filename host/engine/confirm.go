package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
	"github.com/toolhost/toolhost/lp1"
)

// What a person approves is what will run (issue 10 item 3, FR-APR-03):
// the plugin's summary is a headline, redacted and cut to fit one line, so
// every approval surface also shows the call's arguments in full, each
// rendered visibly (Visible) and never redacted, and the files they name
// as the sandbox resolved them. Redaction is for logs, never for what a
// person decides on.

// Argument is one value of a call's arguments, as a person approving the
// call sees it.
type Argument struct {
	// Name locates the value in the arguments: "path", "env.HOME",
	// "argv[0]"; a key that is not a plain word is quoted. Rendered
	// visibly, as the value is.
	Name string `json:"name"`
	// Lines is the whole value, one element per line (split at line
	// feeds), each rendered by Visible: nothing cut, nothing redacted. A
	// value that is not a string is its JSON text, on one line.
	Lines []string `json:"lines"`
	// Paths are the files the value names, as the sandbox resolved them:
	// one for a path argument, one per file for a patch.
	Paths []PathInfo `json:"paths,omitempty"`

	text     string // the value as given, for a string
	isString bool
}

// PathInfo is a path as the sandbox resolved it: the cleaned canonical
// path relative to its root, so "./././a/./b.txt" shows as "a/b.txt".
// Its fields are the names as they are on disk: a surface renders them
// with Visible (Details does).
type PathInfo struct {
	// Root is the root directory containing the path, set only when the
	// sandbox has several roots (with one, every path is under it).
	Root string `json:"root,omitempty"`
	// Rel is relative to Root, forward slashes, "." for the root itself.
	Rel string `json:"rel"`
}

// String is the path as shown: Rel, with its root when there are several.
func (p PathInfo) String() string {
	if p.Root == "" {
		return p.Rel
	}
	return p.Rel + " (in root " + p.Root + ")"
}

// SummaryNote says how the summary differs from what will run, "" when
// it does not: every surface that shows a shortened or redacted summary
// shows this sentence with it.
func (c Confirmation) SummaryNote() string {
	var what string
	switch {
	case c.SummaryTruncated && c.SummaryRedacted:
		what = "summary shortened and secrets hidden in it"
	case c.SummaryTruncated:
		what = "summary shortened"
	case c.SummaryRedacted:
		what = "secrets hidden in the summary"
	default:
		return ""
	}
	return what + "; the full arguments below are what will run"
}

// Details renders the confirmation's arguments for a person, one line per
// line of text, so every surface (a terminal, an MCP elicitation, a
// console) shows the same: each argument's name, its whole value and the
// paths it resolves to. No line it writes starts at the left margin: a
// value's lines are indented and marked with │, so text in an argument
// (a file's content holding "Approve? [y/N]") cannot pass for the
// surface's own question. The result holds no control or format
// character and ends with a line feed.
func (c Confirmation) Details() string {
	var b strings.Builder
	if note := c.SummaryNote(); note != "" {
		fmt.Fprintf(&b, "  (%s)\n", note)
	}
	if len(c.Arguments) == 0 {
		b.WriteString("  no arguments\n")
	}
	for _, a := range c.Arguments {
		switch {
		case len(a.Lines) == 1 && a.Lines[0] != "":
			fmt.Fprintf(&b, "  %s: %s\n", a.Name, a.Lines[0])
		case len(a.Lines) <= 1:
			fmt.Fprintf(&b, "  %s: (empty)\n", a.Name)
		default:
			fmt.Fprintf(&b, "  %s: %d lines\n", a.Name, len(a.Lines))
			for _, l := range a.Lines {
				fmt.Fprintf(&b, "    │%s\n", l)
			}
		}
		for _, p := range a.Paths {
			fmt.Fprintf(&b, "    → file %s\n", Visible(p.String()))
		}
	}
	return b.String()
}

// arguments renders a call's arguments for approval: every value in the
// order the call gives them (duplicate keys included, so a person sees
// both when a model sends two), path arguments with the path each
// resolves to, and a writer's LP1 patch with the files it names.
func (e *Engine) arguments(m abi.Manifest, raw json.RawMessage, resolved map[string]sandbox.Path) []Argument {
	var out []Argument
	flatten("", raw, &out)
	for i := range out {
		a := &out[i]
		if !a.isString || !plainKey.MatchString(a.Name) { // not a top-level string
			continue
		}
		if slices.Contains(m.PathArgs, a.Name) {
			// A key given twice resolved only its last value, which is
			// the one the plugin uses: the other shows no path.
			if p, ok := resolved[pathArgText(a.Name, a.text)]; ok {
				a.Paths = []PathInfo{e.pathInfo(p)}
			}
		}
		if m.WritesUnnamedPaths {
			for _, p := range e.resolvePatch(a.text) {
				a.Paths = append(a.Paths, e.pathInfo(p))
			}
		}
	}
	return out
}

// resolvePatch resolves the paths of an LP1 patch; a path the sandbox
// refuses is left out (the patch then fails as a whole when it runs), and
// text that is not a patch names nothing.
func (e *Engine) resolvePatch(text string) []sandbox.Path {
	if e.cfg.Sandbox == nil || !strings.HasPrefix(text, "LP1") {
		return nil
	}
	patch, err := lp1.Parse(text)
	if err != nil {
		return nil
	}
	var out []sandbox.Path
	for _, given := range patch.Paths() {
		if p, err := e.cfg.Sandbox.Resolve(given); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func (e *Engine) pathInfo(p sandbox.Path) PathInfo {
	info := PathInfo{Rel: p.Rel}
	if e.cfg.Sandbox != nil && len(e.cfg.Sandbox.Roots()) > 1 {
		info.Root = p.RootDir
	}
	return info
}

// pathArgText is the text preflight resolved for a path argument.
func pathArgText(name, s string) string {
	if s == "" && name == "path" {
		return "."
	}
	return s
}

// plainKey is a key shown as it is; any other is quoted.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// keyName is how key k of the object at prefix is named.
func keyName(prefix, k string) string {
	if !plainKey.MatchString(k) {
		return prefix + "[" + strconv.Quote(Visible(k)) + "]"
	}
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// flatten appends the values of raw at prefix: an object or array by its
// members, in the order given, a scalar as itself.
func flatten(prefix string, raw json.RawMessage, out *[]Argument) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		*out = append(*out, Argument{Name: prefix, Lines: []string{Visible(string(raw))}})
		return
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		*out = append(*out, scalar(prefix, tok))
		return
	}
	n := len(*out)
	for i := 0; dec.More(); i++ {
		name := fmt.Sprintf("%s[%d]", prefix, i)
		if delim == '{' {
			k, err := dec.Token()
			if err != nil {
				break
			}
			ks, _ := k.(string)
			name = keyName(prefix, ks)
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		flatten(name, v, out)
	}
	if len(*out) == n && prefix != "" { // an empty object or array
		empty := "{}"
		if delim == '[' {
			empty = "[]"
		}
		*out = append(*out, Argument{Name: prefix, Lines: []string{empty}})
	}
}

// scalar is the argument for a JSON string, number, boolean or null.
func scalar(name string, tok json.Token) Argument {
	s, ok := tok.(string)
	if !ok {
		b, _ := json.Marshal(tok)
		return Argument{Name: name, Lines: []string{string(b)}}
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Visible(l)
	}
	return Argument{Name: name, Lines: lines, text: s, isString: true}
}

// Package argpath finds a call's path arguments: the strings at the
// places a tool's manifest names in path_args and create_args.
//
// A place is a selector: object keys separated by "/", with "*" for
// every element of an array. "path" is the top-level argument path,
// "paths/*" every element of the array paths, "edits/*/path" the key
// path of every object in the array edits. No other wildcard exists, and
// a key cannot contain "/" or be "*": argument names are plain words.
package argpath

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Wildcard is the segment that stands for every element of an array.
const Wildcard = "*"

// Selector is a parsed path_args or create_args entry.
type Selector struct {
	text string
	keys []string
}

// Parse parses a selector, refusing an empty one, an empty segment
// ("a//b", "/a", "a/") and one that starts with "*" (the arguments are an
// object, never an array).
func Parse(s string) (Selector, error) {
	if s == "" {
		return Selector{}, errors.New("an empty path argument name")
	}
	keys := strings.Split(s, "/")
	for i, k := range keys {
		switch {
		case k == "":
			return Selector{}, fmt.Errorf("path argument %q has an empty segment: name object keys separated by single slashes, like \"edits/*/path\"", s)
		case k == Wildcard && i == 0:
			return Selector{}, fmt.Errorf("path argument %q starts with %q, but a call's arguments are an object: name its key first, like \"paths/*\"", s, Wildcard)
		case k != Wildcard && strings.Contains(k, Wildcard):
			return Selector{}, fmt.Errorf("path argument %q has %q inside a key: %q alone stands for every element of an array, and there is no other wildcard", s, k, Wildcard)
		}
	}
	return Selector{text: s, keys: keys}, nil
}

// String is the selector as declared.
func (s Selector) String() string { return s.text }

// TopLevel reports whether the selector names a top-level argument.
func (s Selector) TopLevel() bool { return len(s.keys) == 1 }

// Keys is the selector's segments; "*" stands for every element of an
// array.
func (s Selector) Keys() []string { return append([]string(nil), s.keys...) }

// Found is one place a selector reaches in a call's arguments.
type Found struct {
	// Selector is the manifest's entry that reached the place.
	Selector string
	// Pointer locates the place (RFC 6901): "/path", "/edits/2/path".
	Pointer string
	// Text is the string there.
	Text string
	// Absent says no value is there: an object lacked the key, or the
	// value is null. Text is then empty. An absent or empty array reaches
	// no place at all, so has no Found.
	Absent bool
}

// Name is how a message names the argument: a top-level one by its key,
// as a model wrote it, one inside an array or object by its pointer.
func (f Found) Name() string { return Name(f.Pointer) }

// Name is how a message names the argument at JSON pointer ptr: a
// top-level one by its key, any other by its pointer.
func Name(ptr string) string {
	if len(ptr) > 1 && strings.Count(ptr, "/") == 1 {
		return unescape(ptr[1:])
	}
	return ptr
}

// TypeError is a value at a selector's place of a type that is not what
// the selector says: a number where a path is, a string where an array
// of paths is. The host cannot check such a value against the sandbox,
// and a plugin that decodes leniently might still take it as a path.
type TypeError struct {
	Selector string
	Pointer  string
	Want     string // "a string", "an array", "an object"
	Got      string
}

func (e *TypeError) Error() string {
	return fmt.Sprintf("argument %q is %s, but the tool's path argument %q needs %s there", Name(e.Pointer), e.Got, e.Selector, e.Want)
}

// LimitError says the arguments name more paths than allowed.
type LimitError struct {
	Count, Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("the arguments name %d paths, more than the %d one call may name", e.Count, e.Limit)
}

// Find returns every place the selectors reach in v, a call's decoded
// arguments, in selector order and then in the order of the arrays. A
// selector that does not parse is an error (registry refuses such a
// manifest when it loads). A value of the wrong type at a place is a
// *TypeError; more than limit places holding a string (limit > 0) is a
// *LimitError, returned with nothing found so that no caller resolves
// any of them.
func Find(selectors []string, v any, limit int) ([]Found, error) {
	var out []Found
	for _, text := range selectors {
		s, err := Parse(text)
		if err != nil {
			return nil, err
		}
		if out, err = s.find(v, "", 0, out); err != nil {
			return nil, err
		}
	}
	if limit > 0 {
		n := 0
		for _, f := range out {
			if !f.Absent {
				n++
			}
		}
		if n > limit {
			return nil, &LimitError{Count: n, Limit: limit}
		}
	}
	return out, nil
}

func (s Selector) find(v any, ptr string, depth int, out []Found) ([]Found, error) {
	if depth == len(s.keys) {
		switch v := v.(type) {
		case string:
			return append(out, Found{Selector: s.text, Pointer: ptr, Text: v}), nil
		case nil:
			return append(out, Found{Selector: s.text, Pointer: ptr, Absent: true}), nil
		}
		return nil, &TypeError{Selector: s.text, Pointer: ptr, Want: "a string", Got: kind(v)}
	}
	key := s.keys[depth]
	if key == Wildcard {
		switch v := v.(type) {
		case []any:
			var err error
			for i, e := range v {
				if out, err = s.find(e, ptr+"/"+strconv.Itoa(i), depth+1, out); err != nil {
					return nil, err
				}
			}
			return out, nil
		case nil:
			return out, nil // an absent array names no path
		}
		return nil, &TypeError{Selector: s.text, Pointer: pointerOr(ptr), Want: "an array", Got: kind(v)}
	}
	switch v := v.(type) {
	case map[string]any:
		at := ptr + "/" + escape(key)
		e, ok := v[key]
		if !ok {
			if depth+1 < len(s.keys) && s.keys[depth+1] == Wildcard {
				return out, nil // an absent array names no path
			}
			return append(out, Found{Selector: s.text, Pointer: at, Absent: true}), nil
		}
		return s.find(e, at, depth+1, out)
	case nil:
		// No object where one was to be: what it would hold is absent.
		return append(out, Found{Selector: s.text, Pointer: pointerOr(ptr), Absent: true}), nil
	}
	return nil, &TypeError{Selector: s.text, Pointer: pointerOr(ptr), Want: "an object", Got: kind(v)}
}

// CaseMismatch is a key of the arguments that differs from a key a
// selector names only in case.
type CaseMismatch struct {
	Selector string
	Pointer  string // where the key was given, "/edits/0/PATH"
	Given    string // the key as given
	Want     string // the key the selector names
}

// Mismatched returns the first key in v, at any level a selector walks,
// spelled like one of the selectors' keys in another case ("PATH" for
// "path", "Edits" for "edits"): the host checks the exact key, and a
// plugin matching keys regardless of case would take the value the host
// never checked. Keys are visited in sorted order, so the answer does not
// depend on map order.
func Mismatched(selectors []string, v any) (CaseMismatch, bool) {
	for _, text := range selectors {
		s, err := Parse(text)
		if err != nil {
			continue
		}
		if m, ok := s.mismatched(v, "", 0); ok {
			return m, true
		}
	}
	return CaseMismatch{}, false
}

func (s Selector) mismatched(v any, ptr string, depth int) (CaseMismatch, bool) {
	if depth == len(s.keys) {
		return CaseMismatch{}, false
	}
	key := s.keys[depth]
	switch v := v.(type) {
	case []any:
		if key != Wildcard {
			return CaseMismatch{}, false
		}
		for i, e := range v {
			if m, ok := s.mismatched(e, ptr+"/"+strconv.Itoa(i), depth+1); ok {
				return m, true
			}
		}
	case map[string]any:
		if key == Wildcard {
			return CaseMismatch{}, false
		}
		var odd []string
		for k := range v {
			if k != key && strings.EqualFold(k, key) {
				odd = append(odd, k)
			}
		}
		if len(odd) > 0 {
			first := odd[0]
			for _, k := range odd[1:] {
				first = min(first, k)
			}
			return CaseMismatch{Selector: s.text, Pointer: ptr + "/" + escape(first), Given: first, Want: key}, true
		}
		if e, ok := v[key]; ok {
			return s.mismatched(e, ptr+"/"+escape(key), depth+1)
		}
	}
	return CaseMismatch{}, false
}

// escape writes a key as a JSON pointer segment (RFC 6901).
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func unescape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~1", "/"), "~0", "~")
}

func pointerOr(ptr string) string {
	if ptr == "" {
		return "/" // the arguments themselves
	}
	return ptr
}

// kind names a decoded JSON value's type for a message.
func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case nil:
		return "null"
	}
	return "a number"
}

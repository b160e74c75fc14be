package engine

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode"
)

// ambiguousKey finds an object member in raw whose name another member
// of the same object repeats, exactly or up to case. The host keeps the
// last of two equal names (encoding/json does) and checks, resolves and
// shows for approval that value; a plugin whose decoder keeps the first,
// or matches names regardless of case (Go's, the SDK's), would act on the
// other one, a path nobody checked (issue 13, red team). ptr is the JSON
// pointer of the object; first and second the two names as written.
func ambiguousKey(raw []byte) (ptr, first, second string, found bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object    bool
		expectKey bool
		ptr, key  string
		names     map[string]string // folded name → name as written
	}
	var stack []*frame
	// valueDone marks the enclosing object ready for its next name.
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	childPtr := func() string {
		if n := len(stack); n > 0 {
			top := stack[n-1]
			if top.object {
				return top.ptr + "/" + escapeKey(top.key)
			}
			return top.ptr + "/-"
		}
		return ""
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", "", "", false // io.EOF, or JSON the caller already refused
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				stack = append(stack, &frame{object: t == '{', expectKey: t == '{', ptr: childPtr(), names: map[string]string{}})
			default:
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				top := stack[n-1]
				folded := foldName(t)
				if prev, ok := top.names[folded]; ok {
					return top.ptr, prev, t, true
				}
				top.names[folded] = t
				top.key, top.expectKey = t, false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// foldName maps a name to one spelling per case-insensitive class, the
// classes strings.EqualFold uses (so "ſ" and "K", the Kelvin sign, fold
// with "s" and "k").
func foldName(s string) string {
	return strings.Map(func(r rune) rune {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		return min
	}, s)
}

// escapeKey escapes a member name for a JSON pointer (RFC 6901).
func escapeKey(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

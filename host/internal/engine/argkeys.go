package engine

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ambiguousKey finds an object member in raw whose name another member
// of the same object repeats, exactly or up to case (as strings.EqualFold
// compares). The host keeps the last of two equal names (encoding/json
// does) and checks, resolves and shows for approval that value; a plugin
// whose decoder keeps the first, or matches names regardless of case
// (Go's, the SDK's), would act on the other one, a path nobody checked.
// ptr is the JSON pointer of the object; first and
// second the two names as written.
//
// raw has already decoded as JSON. Every call crosses this scan, so it
// walks the bytes once, allocating a record per object or array and its
// list of names (a read_file's arguments: 4 allocations, under 300
// bytes), a map only past fewNames members, and a copy only of a name
// with escapes. The pointer is built only for the answer: built
// per level while descending, 10,000 levels of 20-byte names (250 KB of
// arguments) held a gigabyte of pointers at once.
func ambiguousKey(raw []byte) (ptr, first, second string, found bool) {
	var stack []*members
	expectName := false
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{', '[':
			child := &members{object: raw[i] == '{'}
			stack = append(stack, child)
			expectName = child.object
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectName = false
		case ',':
			if top := stack[len(stack)-1]; top.object {
				expectName = true
			} else {
				top.index++
			}
		case '"':
			end := stringEnd(raw, i)
			if expectName {
				top := stack[len(stack)-1]
				name := raw[i+1 : end]
				if bytes.IndexByte(name, '\\') >= 0 {
					var s string
					if json.Unmarshal(raw[i:end+1], &s) == nil {
						name = []byte(s)
					}
				}
				if prev, ok := top.add(name); ok {
					return pointer(stack[:len(stack)-1]), prev, string(name), true
				}
				expectName = false
			}
			i = end
		}
	}
	return "", "", "", false
}

// members are the names an object gave so far, or an array's position.
type members struct {
	object bool
	index  int      // of the array element being read
	last   []byte   // the name whose value is being read
	names  [][]byte // the first few, compared one by one
	folded map[string]string
}

// fewNames is how many names an object keeps in a list before a map.
const fewNames = 16

// add records name and returns an earlier name it repeats, if any.
func (m *members) add(name []byte) (string, bool) {
	m.last = name
	if m.folded == nil && len(m.names) < fewNames {
		for _, n := range m.names {
			if bytes.EqualFold(n, name) {
				return string(n), true
			}
		}
		m.names = append(m.names, name)
		return "", false
	}
	if m.folded == nil {
		m.folded = make(map[string]string, 2*fewNames)
		for _, n := range m.names {
			m.folded[foldName(n)] = string(n)
		}
	}
	key := foldName(name)
	if prev, ok := m.folded[key]; ok {
		return prev, true
	}
	m.folded[key] = string(name)
	return "", false
}

// pointer is the JSON pointer of the value being read in the innermost
// of outer, the containers around it.
func pointer(outer []*members) string {
	var b strings.Builder
	for _, m := range outer {
		b.WriteByte('/')
		if m.object {
			b.WriteString(escapeKey(string(m.last)))
		} else {
			b.WriteString(strconv.Itoa(m.index))
		}
	}
	return b.String()
}

// stringEnd is the index of the quote closing the JSON string opening at
// raw[start].
func stringEnd(raw []byte, start int) int {
	for i := start + 1; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(raw) - 1
}

// foldName maps a name to one spelling per class of names strings.EqualFold
// calls equal: each rune to the smallest of its case-folding orbit, then
// ASCII letters to lower case ("ſ" and "K", the Kelvin sign, join "s" and
// "k").
func foldName(name []byte) string {
	var b strings.Builder
	b.Grow(len(name))
	for len(name) > 0 {
		r, size := utf8.DecodeRune(name)
		name = name[size:]
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		if 'A' <= min && min <= 'Z' {
			min += 'a' - 'A'
		}
		b.WriteRune(min)
	}
	return b.String()
}

// escapeKey escapes a member name for a JSON pointer (RFC 6901).
func escapeKey(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

package searchtext

import (
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/jsontext"
)

// listTailRoom is kept free of entries for the closing line and members.
const listTailRoom = 512

// Listing is list_directory's result for r, a SearchList of dir: one
// line per entry as ls shows it, then the totals, and with structured
// the entries as a JSON object. Both together stay within limit (<= 0:
// none): entries that would take them past it are left out of both and
// the listing says it was truncated, so the JSON stays valid and the
// text says how to see the rest. Without structured, obj is nil: the
// text already names every entry, its kind and its size, in a tenth of
// the JSON's bytes, and a model pays for each.
func Listing(dir string, r abi.SearchResult, structured bool, limit int64) (text, obj []byte) {
	truncated := r.Truncated
	text = make([]byte, 0, 32+len(r.Files)*24)
	if structured {
		obj = make([]byte, 0, 64+len(r.Files)*96)
		obj = append(obj, `{"path":`...)
		obj = jsontext.AppendString(obj, dir)
		obj = append(obj, `,"entries":[`...)
	}
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	shownN := 0
	for i, e := range r.Files {
		tm, om := len(text), len(obj)
		if structured {
			if i > 0 {
				obj = append(obj, ',')
			}
			obj = appendListEntry(obj, e)
		}
		text = appendListLine(text, strings.TrimPrefix(e.Path, prefix), e)
		if limit > 0 && int64(len(text)+len(obj)+listTailRoom) > limit {
			text, obj, truncated = text[:tm], obj[:om], true
			break
		}
		shownN++
	}
	if structured {
		obj = append(obj, `],"truncated":`...)
		obj = strconv.AppendBool(obj, truncated)
		obj = append(obj, `,"total":`...)
		obj = strconv.AppendInt(obj, int64(r.TotalMatches), 10)
		obj = append(obj, `,"skipped":{"hidden":`...)
		obj = strconv.AppendInt(obj, int64(r.Skipped.Hidden), 10)
		obj = append(obj, `,"ignored":`...)
		obj = strconv.AppendInt(obj, int64(r.Skipped.Ignored), 10)
		obj = append(obj, "}}"...)
	}
	text = appendListTotals(text, r, shownN, truncated)
	return text, obj
}

// appendListLine appends one entry as ls shows it.
func appendListLine(t []byte, name string, e abi.SearchFile) []byte {
	t = AppendName(t, name)
	switch e.Type {
	case "dir":
		t = append(t, '/')
	case "symlink":
		t = append(t, '@')
	case "file":
		t = append(t, "  "...)
		t = strconv.AppendInt(t, e.Size, 10)
	default:
		t = append(t, "  ("...)
		t = append(t, e.Type...)
		t = append(t, ')')
	}
	return append(t, '\n')
}

// appendListTotals ends the text: how many entries, what was left out,
// and how to see more.
func appendListTotals(t []byte, r abi.SearchResult, shownN int, truncated bool) []byte {
	if r.TotalMatches == 0 {
		t = append(t, "(empty)"...)
	} else {
		t = strconv.AppendInt(t, int64(shownN), 10)
		if truncated {
			t = append(t, " of "...)
			if r.TotalIsLowerBound {
				t = append(t, "at least "...)
			}
			t = strconv.AppendInt(t, int64(r.TotalMatches), 10)
		}
		if r.TotalMatches == 1 {
			t = append(t, " entry"...)
		} else {
			t = append(t, " entries"...)
		}
	}
	var left []string
	if r.Skipped.Hidden > 0 {
		left = append(left, strconv.Itoa(r.Skipped.Hidden)+" hidden (include_hidden:true shows them)")
	}
	if r.Skipped.Ignored > 0 {
		left = append(left, strconv.Itoa(r.Skipped.Ignored)+" ignored by .gitignore or .ignore (respect_gitignore:false shows them)")
	}
	if len(left) > 0 {
		t = append(t, "; left out: "...)
		t = append(t, strings.Join(left, ", ")...)
	}
	if truncated {
		t = append(t, "; truncated: raise max_entries (up to 10000), list a subdirectory, or lower depth"...)
	}
	return append(t, '\n')
}

func appendListEntry(out []byte, e abi.SearchFile) []byte {
	out = append(out, `{"name":`...)
	out = jsontext.AppendString(out, shownName(baseName(e.Path)))
	out = append(out, `,"path":`...)
	out = jsontext.AppendString(out, shownName(e.Path))
	if e.InvalidUTF8 {
		// The host wrote each byte that is not UTF-8 as \xNN: replacing
		// them with U+FFFD would list different files under one name.
		// Such a file cannot be named in a tool call.
		out = append(out, `,"invalid_utf8":true`...)
	}
	if hasControl(e.Path) {
		out = append(out, `,"escaped":true`...)
	}
	out = append(out, `,"type":"`...)
	out = append(out, e.Type...)
	out = append(out, `","size":`...)
	out = strconv.AppendInt(out, e.Size, 10)
	out = append(out, `,"modified":"`...)
	out = time.Unix(0, e.ModTime).UTC().AppendFormat(out, time.RFC3339)
	return append(out, `"}`...)
}

// shownName is a name as the structured listing gives it: control
// characters written out, C0 and DEL as \xNN and C1 as \u{XX}, as the
// text shows them (AppendName). The host strips control characters from
// every result, so one left inside a name would cut it short or merge it
// with another ("a\x01b" with "ab"); the entry says escaped. Characters
// that only hide or reorder text stay, JSON-escaped, so that the name
// decodes to the real one.
func shownName(name string) string {
	if !hasControl(name) {
		return name
	}
	return string(appendEscaped(nil, name, c1))
}

// hasControl reports a C0 or C1 control character or DEL in s.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || c1(r) {
			return true
		}
	}
	return false
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

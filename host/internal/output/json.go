package output

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// SanitizeJSON is Sanitize for a tool's result, which is often JSON.
// When s is a JSON object or array, a character
// Sanitize would strip is escaped instead where it stands inside a
// string (DEL and the C1 controls as \u007f, \u009b, ...; invalid UTF-8
// as \ufffd), so the text stays valid JSON, decodes to what s does, and
// shows the character rather than hiding it. Stripping there would be
// wrong twice over: a U+009B takes the punctuation after it along as its
// parameters (a file name could close its string and add entries), and
// a name without its control character is not the real name. Outside
// strings valid JSON has only whitespace to strip. Any other s is
// Sanitize(s). Clean input is returned as is, without allocating.
func SanitizeJSON(s string) string {
	if clean(s) {
		return s
	}
	if !isJSONContainer(s) {
		return strip(s)
	}
	return escapeJSON(s)
}

// isJSONContainer reports whether s is a valid JSON object or array. Only
// output that needs sanitizing pays for the check.
func isJSONContainer(s string) bool {
	t := strings.TrimLeft(s, " \t\r\n")
	return t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t))
}

// escapeJSON rewrites valid JSON s so that Sanitize leaves it unchanged
// and it decodes to the same value. Runs of bytes that stay are copied at
// once.
func escapeJSON(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	start, inString := 0, false
	// replace writes what precedes byte i, then with for its size bytes.
	replace := func(i, size int, with string) {
		b.WriteString(s[start:i])
		b.WriteString(with)
		start = i + size
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case !inString:
			// Structure, literals, numbers and whitespace: ASCII, with no
			// control but \t, \n and \r. A \r that would move the cursor
			// goes, as in Sanitize.
			if c == '\r' && (i+1 == len(s) || s[i+1] != '\n') {
				replace(i, 1, "")
			}
			inString = c == '"'
			i++
		case c == '\\':
			// An escape; in valid JSON the byte after the backslash is
			// ASCII, and \u's hex digits follow as plain bytes.
			i += 2
		case c == '"':
			inString = false
			i++
		case c < 0x7f:
			i++ // raw C0 controls are not valid JSON in a string
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				replace(i, 1, `\ufffd`)
			case !printable(r):
				replace(i, size, `\u00`+hexDigits[r>>4:r>>4+1]+hexDigits[r&0xf:r&0xf+1])
			}
			i += size
		}
	}
	b.WriteString(s[start:])
	return b.String()
}

const hexDigits = "0123456789abcdef"

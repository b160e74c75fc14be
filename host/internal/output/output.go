// Package output owns making tool output safe to show and to hand back to
// a model: Sanitize strips terminal control sequences (SRD FR-OUT-02,
// NFR-SEC-05) and Truncate caps a result with the marker inside the limit
// (FR-OUT-04/04a).
//
// output must never add content other than the truncation marker and
// U+FFFD for invalid UTF-8, never reorder or rewrite printable text, and
// never return more bytes than the limit it was given.
package output

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// TruncationMarker ends every truncated output.
const TruncationMarker = "\n\n... [output truncated]"

// Truncate returns s cut so that, marker included, it is at most max bytes
// (the SRD's truncate_output, FR-OUT-04a). It never splits a UTF-8
// sequence; when max leaves no room for a body, the result is the start
// of the marker. A negative max is treated as 0.
func Truncate(s string, max int) string {
	max = maxInt(max, 0)
	if len(s) <= max {
		return s
	}
	if max <= len(TruncationMarker) {
		return TruncationMarker[:max]
	}
	end := max - len(TruncationMarker)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + TruncationMarker
}

// maxInt is the builtin max; the parameter name max shadows it here.
func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Sanitize removes terminal control sequences and control characters:
// ESC sequences (CSI, OSC, DCS, SOS, PM, APC, two-byte and nF escapes),
// C1 controls (U+0080–U+009F, and the raw 8-bit CSI byte 0x9B with its
// parameters), C0 controls other than \n and \t, DEL, and a \r that does
// not start a \r\n. A control string (OSC, DCS, ...) is removed up to its
// terminator; if it has none, only its introducer is, and the rest stays
// as inert text. Invalid UTF-8 becomes U+FFFD. Everything else,
// including all printable Unicode, is kept byte for byte. Clean input is
// returned as is, without allocating: every result passes through here.
func Sanitize(s string) string {
	if clean(s) {
		return s
	}
	return strip(s)
}

// strip is Sanitize without the fast path.
func strip(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	scan(&b, s, false)
	return b.String()
}

// scan writes s sanitized to b and returns how much of s it consumed. With
// more false, s is the whole output: all of it is consumed. With more
// true, output continues after s (a Stream): scan stops where a sequence
// starts whose meaning depends on bytes not seen yet (a rune, a \r, an
// escape or a control string cut at the end of s), so that the rest can be
// scanned again once they come.
func scan(b *strings.Builder, s string, more bool) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		next, open := i+size, false
		switch {
		case r == utf8.RuneError && size == 1 && !utf8.FullRuneInString(s[i:]):
			// A rune cut at the end of s.
			if more {
				return i
			}
			b.WriteRune(utf8.RuneError)
		case r == utf8.RuneError && size == 1 && s[i] == 0x9b:
			// The 8-bit CSI byte, meaningful to terminals not in UTF-8
			// mode: drop its parameters too.
			next, open = skipCSI(s, i+1)
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == 0x1b:
			next, open = skipEscape(s, i+1)
		case r == 0x9b:
			next, open = skipCSI(s, i+size)
		case r == '\r':
			open = i+1 == len(s)
			if !open && s[i+1] == '\n' {
				b.WriteByte('\r')
			}
		case printable(r):
			b.WriteString(s[i:next])
		}
		if open && more {
			return i
		}
		i = next
	}
	return len(s)
}

// printable reports whether a valid rune is text for a terminal: anything
// but C0, DEL and C1, except \n and \t.
func printable(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return true
	case r < 0x20 || r == 0x7f:
		return false
	case r >= 0x80 && r <= 0x9f:
		return false
	}
	return true
}

// clean reports whether strip would return s unchanged. It skips eight
// printable ASCII bytes at a time, since most output is plain text.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		for i+8 <= len(s) && printable8(binary.LittleEndian.Uint64([]byte(s[i:i+8]))) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		switch {
		case c >= 0x20 && c < 0x7f, c == '\n', c == '\t':
			continue
		case c == '\r' && i+1 < len(s) && s[i+1] == '\n':
			continue
		case c < 0x80:
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !printable(r) {
			return false
		}
		i += size - 1
	}
	return true
}

// printable8 reports whether all eight bytes of x are in 0x20–0x7E.
func printable8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (x - 0x20*ones) & ^x & highs  // some byte < 0x20
	above := ((x + 0x01*ones) | x) & highs // some byte >= 0x7F
	return below|above == 0
}

// skipEscape skips the rest of an ESC-introduced sequence, s[i] being the
// byte after ESC, and returns the index after it. open reports that s
// ends before the sequence is decided: more bytes could change its end.
func skipEscape(s string, i int) (end int, open bool) {
	if i >= len(s) {
		return i, true
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC
		end, ok, open := skipString(s, i+1)
		if ok {
			return end, open
		}
		// Unterminated: a terminal would swallow the rest, but dropping
		// the introducer already makes it inert text, and a stray ESC ]
		// must not cost a model the rest of the output.
		return i + 1, open
	}
	// Two-byte escape (ESC 7, ESC c, ...) or nF escape: intermediates
	// 0x20–0x2F, then a final byte 0x30–0x7E (ESC ( B).
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i == len(s) {
		return i, true
	}
	if s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i, false
}

// skipCSI skips parameter (0x30–0x3F) and intermediate (0x20–0x2F) bytes
// up to and including the final byte (0x40–0x7E). Any other byte ends a
// malformed sequence without being consumed, so it is judged on its own:
// an ESC starts a new sequence, a newline is kept. open reports that s
// ended first.
func skipCSI(s string, i int) (end int, open bool) {
	for ; i < len(s); i++ {
		c := s[i]
		if c >= 0x40 && c <= 0x7e {
			return i + 1, false
		}
		if c < 0x20 || c > 0x3f {
			return i, false
		}
	}
	return i, true
}

// skipString finds the end of a control string: after its terminator,
// BEL, ESC \ or the 8-bit ST (U+009C), or at an ESC that is not one,
// which starts a new sequence. CAN and SUB abort it, as in terminals. ok
// is false when the string is not terminated before the end of s. open
// reports that bytes after s could change the answer: the string is not
// terminated, or s ends in an ESC that a \ would make its terminator.
func skipString(s string, i int) (end int, ok, open bool) {
	for ; i < len(s); i++ {
		switch {
		case s[i] == 0x07, s[i] == 0x18, s[i] == 0x1a:
			return i + 1, true, false
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2, true, false
		case s[i] == 0x1b:
			return i, true, i+1 == len(s)
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c:
			return i + 2, true, false
		}
	}
	return i, false, true
}

// Prose is Sanitize for text that is read as prose rather than returned
// as a result: a plugin's description, its schema's titles. It also
// removes the bidi embedding, override and isolate characters (U+202A–
// U+202E, U+2066–U+2069), which make text display in an order other
// than the one a model reads it in; prose has no need of them, while a
// result (a file's content) is kept byte for byte.
func Prose(s string) string {
	s = Sanitize(s)
	if !strings.ContainsFunc(s, bidiControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if bidiControl(r) {
			return -1
		}
		return r
	}, s)
}

// bidiControl reports whether r is a bidi embedding, override or isolate
// character (the "Trojan Source" set).
func bidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// Package output makes tool output safe to show and to hand back to a
// model: Sanitize strips terminal control sequences (SRD FR-OUT-02) and
// Truncate caps a result with the marker inside the limit (FR-OUT-04/04a).
// It never adds content other than the marker and U+FFFD.
package output

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
)

// TruncationMarker ends every truncated output.
const TruncationMarker = "\n\n... [output truncated]"

// Truncate returns s cut so that, marker included, it is at most max bytes,
// never splitting a UTF-8 sequence.
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

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Sanitize removes terminal control sequences and control characters from
// s, keeping \n, \t and \r\n; invalid UTF-8 becomes U+FFFD. Clean input is
// returned as is, without allocating.
func Sanitize(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if s[i] == 0x9b { // 8-bit CSI
				i = skipCSI(s, i+1)
				continue
			}
			b.WriteRune(utf8.RuneError)
		case r == 0x1b:
			i = skipEscape(s, i)
			continue
		case r == 0x9b:
			i = skipCSI(s, i+size)
			continue
		case r == '\r':
			if i+1 < len(s) && s[i+1] == '\n' {
				b.WriteByte('\r')
			}
		case keep(r):
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// keep reports whether a valid rune is printable text for a terminal.
func keep(r rune) bool {
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

// clean reports whether Sanitize would return s unchanged. It skips eight
// printable ASCII bytes at a time: every result passes through here.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		for i+8 <= len(s) && printable8(binary.LittleEndian.Uint64([]byte(s[i:i+8]))) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c >= 0x20 && c < 0x7f || c == '\n' || c == '\t' {
			continue
		}
		if c == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			continue
		}
		if c < 0x80 {
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (r >= 0x80 && r <= 0x9f) {
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

// skipEscape skips an ESC-introduced sequence starting at s[i] == ESC and
// returns the index after it.
func skipEscape(s string, i int) int {
	i++
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC: strings up to BEL or ST
		return skipString(s, i+1)
	}
	// Two-byte (or nF: intermediates then a final) sequence.
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipCSI skips parameters and intermediates up to and including the
// final byte (0x40–0x7E).
func skipCSI(s string, i int) int {
	for i < len(s) {
		c := s[i]
		i++
		if c >= 0x40 && c <= 0x7e {
			return i
		}
		if c < 0x20 || c > 0x3f && c < 0x40 || c >= 0x7f {
			return i - 1 // malformed: stop before the stray byte
		}
	}
	return i
}

// skipString skips a control string ended by BEL, ESC \ or 8-bit ST.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0x1b:
			return i
		case strings.HasPrefix(s[i:], "\u009c"):
			return i + 2
		}
		i++
	}
	return i
}

// Package jsontext appends JSON strings for code that builds JSON by hand,
// inside a plugin (where encoding/json costs about ten times more) and in
// the host alike, escaped so that nothing in them is a character a
// terminal or an editor would act on or hide.
package jsontext

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string, escaped like encoding/json with
// HTML escaping off: quotes, backslashes and control characters escaped,
// U+2028 and U+2029 escaped, invalid UTF-8 replaced by \ufffd. Runs of safe
// bytes are copied at once.
//
// Beyond encoding/json, every character a terminal or an editor would act
// on or hide is escaped too (DEL, the C1 controls, bidi and zero-width
// characters; see invisible): the host strips control characters from a
// result (FR-OUT-02), and a raw U+009B inside a string would take the
// JSON punctuation after it along as its parameters.
// Decoded, the string is still s.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x7f {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' || invisible(r) {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// invisible reports whether r is a C1 control, or a character that
// reorders or hides text (bidi controls, zero-width characters): shown
// raw, a name holding one is not what it looks like.
func invisible(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidi marks, embeddings, overrides and isolates
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff:
		return true // zero-width space, non-joiner, joiner, word joiner, BOM
	}
	return false
}

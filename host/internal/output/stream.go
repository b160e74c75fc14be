package output

import "strings"

// maxHeld bounds what a Stream holds back of a sequence a chunk ends
// inside. Past it, a CSI or escape keeps only its introducer (its other
// bytes are dropped whatever follows), and a control string (OSC, DCS,
// ...) is dropped up to its terminator, or to the end of the stream if it
// never has one: an output that opens an OSC and never ends it must not
// make the host buffer it all.
const maxHeld = 4 << 10

// Stream sanitizes output that arrives in chunks (SRD FR-OUT-01/02): what it returns for all the chunks, Flush included, is
// Sanitize of their concatenation, however they were cut, except that a
// control string longer than maxHeld is dropped even if it is never
// terminated. A chunk boundary inside an escape sequence or a UTF-8 rune
// therefore neither lets part of it through as text nor mangles the rune:
// Stream holds back the unfinished sequence (at most maxHeld bytes) until
// the next chunk decides it. Use one Stream per output stream; a Stream is
// not safe for concurrent use.
type Stream struct {
	held string
	// dropping says held is a control string that outgrew maxHeld, cut
	// to its introducer: at the end of the stream it is dropped, not
	// shown as the inert text an unterminated one would leave.
	dropping bool
}

// Write returns chunk sanitized, less any sequence it ends inside, which
// is held back for the next Write or Flush.
func (s *Stream) Write(chunk string) string {
	if s.held == "" && clean(chunk) {
		// A clean chunk ends on a whole rune and not on a \r: nothing
		// in it waits for the next one.
		return chunk
	}
	in := s.held + chunk
	var b strings.Builder
	b.Grow(len(in))
	n := scan(&b, in, true)
	if n > 0 {
		// What was held is decided: the new held sequence starts fresh.
		s.dropping = false
	}
	s.held = in[n:]
	if len(s.held) > maxHeld {
		s.held, s.dropping = shorten(s.held, s.dropping)
	}
	return b.String()
}

// Flush returns what is held back, sanitized as the end of the output,
// and makes s ready for a new stream.
func (s *Stream) Flush() string {
	held, dropping := s.held, s.dropping
	*s = Stream{}
	if dropping {
		return ""
	}
	return Sanitize(held)
}

// shorten cuts a held sequence that outgrew maxHeld to one that scan
// treats the same from here on. A CSI's parameters and an escape's
// intermediates are dropped whatever follows, so their introducer is
// enough. A control string keeps its introducer and a last byte that may
// begin its terminator (ESC of ESC \, or the first byte of U+009C), and
// is dropped from now on even if it never ends. Only these sequences can
// be longer than a rune, so nothing else reaches here.
func shorten(h string, dropping bool) (string, bool) {
	switch {
	case h[0] == 0x9b:
		return h[:1], dropping
	case strings.HasPrefix(h, "\u009b"), strings.HasPrefix(h, "\x1b["):
		return h[:2], dropping
	case h[0] == 0x1b && strings.IndexByte("]PX^_", h[1]) >= 0:
		if last := h[len(h)-1]; last == 0x1b || last == 0xc2 {
			return h[:2] + h[len(h)-1:], true
		}
		return h[:2], true
	case h[0] == 0x1b:
		return h[:2], dropping
	}
	return h, dropping
}

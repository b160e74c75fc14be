package jobs

import "unicode/utf8"

// ring holds the last size bytes a job wrote. The byte at offset o of
// the job's output is at index o%size, whether the buffer has grown to
// size yet or not, so it grows as a job writes and never copies what it
// holds once full.
type ring struct {
	buf   []byte
	size  int
	total int64 // bytes written so far
}

func (r *ring) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if r.total+int64(len(p)) <= int64(r.size) {
		// Still growing: offsets are indexes.
		if need := int(r.total) + len(p); need > cap(r.buf) {
			grown := make([]byte, len(r.buf), min(r.size, max(need, 2*cap(r.buf), 4096)))
			copy(grown, r.buf)
			r.buf = grown
		}
		r.buf = append(r.buf, p...)
		r.total += int64(len(p))
		return
	}
	if len(r.buf) < r.size {
		grown := make([]byte, r.size)
		copy(grown, r.buf)
		r.buf = grown
	}
	if len(p) > r.size {
		r.total += int64(len(p) - r.size)
		p = p[len(p)-r.size:]
	}
	for len(p) > 0 {
		i := int(r.total % int64(r.size))
		n := copy(r.buf[i:], p)
		p = p[n:]
		r.total += int64(n)
	}
}

// first is the oldest offset the ring still holds.
func (r *ring) first() int64 { return max(0, r.total-int64(r.size)) }

// read returns at most n bytes from offset from (moved up to first() if
// the ring lost them), and the offset it read from.
func (r *ring) read(from int64, n int) ([]byte, int64) {
	from = max(from, r.first())
	if from >= r.total || n <= 0 {
		return nil, min(from, r.total)
	}
	end := min(r.total, from+int64(n))
	out := make([]byte, 0, end-from)
	for o := from; o < end; {
		i := int(o % int64(r.size))
		k := min(int64(len(r.buf)-i), end-o)
		out = append(out, r.buf[i:i+int(k)]...)
		o += k
	}
	return out, from
}

// utf8Bounds trims p to whole characters where it was cut: lead bytes
// at its start that continue a character begun before it (when cutStart),
// and a character left unfinished at its end (when cutEnd). It returns
// how many bytes it dropped from each end. A p that would lose all it has
// is returned whole: a reader must always get further.
func utf8Bounds(p []byte, cutStart, cutEnd bool) (out []byte, head, tail int) {
	if cutStart {
		for head < len(p) && head < utf8.UTFMax-1 && !utf8.RuneStart(p[head]) {
			head++
		}
	}
	body := p[head:]
	if cutEnd {
		// Look back over at most UTFMax-1 bytes for the start of the last
		// character; if it is incomplete, cut before it.
		for i := len(body) - 1; i >= 0 && i >= len(body)-utf8.UTFMax; i-- {
			if utf8.RuneStart(body[i]) {
				if !utf8.FullRune(body[i:]) {
					tail = len(body) - i
				}
				break
			}
		}
	}
	body = body[:len(body)-tail]
	if len(body) == 0 {
		return p, 0, 0
	}
	return body, head, tail
}

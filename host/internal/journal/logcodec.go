package journal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A step log record's payload is binary: a version byte, then its fields
// in a fixed order, each string and byte slice prefixed by its length as a
// uvarint, each count as a uvarint, each time as a flag byte and its Unix
// nanoseconds as a varint. It is written on every call's path, where
// encoding/json cost more than the write(2) itself (reflection, and every
// byte of a result escaped), and it copies a result's content once.
// Records that open with '{' are the JSON of earlier versions, still read
// when a log they left is replayed.
const logBinary = 1

// Record kinds after the sequence number and batch.
const (
	kindStep  = 0
	kindReads = 1
)

// Flags of a step and of a result.
const (
	stepHasBatch = 1 << iota
	stepEnd
)

const (
	resultOK = 1 << iota
	resultTruncated
	resultPresent // of a call in a batch: it has a result
)

// appendRecord appends rec's payload to buf.
func appendRecord(buf []byte, rec *logRecord) []byte {
	buf = append(buf, logBinary)
	buf = binary.AppendUvarint(buf, rec.Seq)
	buf = appendString(buf, rec.Batch)
	if r := rec.Reads; r != nil {
		buf = append(buf, kindReads)
		buf = appendString(buf, r.Conversation)
		buf = binary.AppendUvarint(buf, uint64(len(r.Reads)))
		for _, rd := range r.Reads {
			buf = appendString(buf, rd.Path)
			buf = appendString(buf, rd.SHA256)
			buf = appendTime(buf, rd.ReadAt)
		}
		return buf
	}
	s := &rec.Step
	buf = append(buf, kindStep)
	var flags byte
	if s.Batch != nil {
		flags |= stepHasBatch
	}
	if s.End {
		flags |= stepEnd
	}
	buf = append(buf, flags)
	buf = appendTime(buf, s.At)
	if b := s.Batch; b != nil {
		buf = appendString(buf, b.ID)
		buf = appendString(buf, b.Conversation)
		buf = appendString(buf, b.Turn)
		buf = appendTime(buf, b.Created)
		buf = appendString(buf, string(b.State))
		buf = binary.AppendUvarint(buf, uint64(len(b.Calls)))
		for i := range b.Calls {
			buf = appendCall(buf, &b.Calls[i])
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(s.Decisions)))
	for _, d := range s.Decisions {
		buf = appendString(buf, d.CallID)
		buf = appendString(buf, string(d.Verdict))
		buf = appendString(buf, d.By)
	}
	buf = binary.AppendUvarint(buf, uint64(len(s.Results)))
	for i := range s.Results {
		buf = appendString(buf, s.Results[i].CallID)
		buf = appendResult(buf, &s.Results[i].Result, 0)
	}
	buf = binary.AppendUvarint(buf, uint64(len(s.Starts)))
	for _, id := range s.Starts {
		buf = appendString(buf, id)
	}
	return buf
}

// appendCall appends what a step records of a call; what is set only
// when read (its journal id, start, processes, changes) is not logged.
func appendCall(buf []byte, c *Call) []byte {
	buf = appendString(buf, c.ID)
	buf = appendString(buf, c.Tool)
	buf = appendString(buf, c.Path)
	buf = binary.AppendUvarint(buf, uint64(len(c.Arguments)))
	buf = append(buf, c.Arguments...)
	buf = appendString(buf, c.Disposition)
	buf = appendString(buf, string(c.Decision))
	buf = appendString(buf, c.DecidedBy)
	if c.Result == nil {
		return append(buf, 0)
	}
	return appendResult(buf, c.Result, resultPresent)
}

func appendResult(buf []byte, r *Result, flags byte) []byte {
	if r.OK {
		flags |= resultOK
	}
	if r.Truncated {
		flags |= resultTruncated
	}
	buf = append(buf, flags)
	buf = appendString(buf, r.Content)
	buf = appendString(buf, r.ErrorKind)
	buf = appendString(buf, r.ErrorMessage)
	return appendTime(buf, r.Finished)
}

func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}

func appendTime(buf []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(buf, 0)
	}
	return binary.AppendVarint(append(buf, 1), t.UnixNano())
}

// decodeRecord parses a record's payload, binary or the JSON of earlier
// versions.
func decodeRecord(payload []byte) (logRecord, error) {
	var rec logRecord
	if len(payload) > 0 && payload[0] == '{' {
		err := json.Unmarshal(payload, &rec)
		return rec, err
	}
	d := decoder{buf: payload}
	if v := d.byte(); v != logBinary {
		return rec, fmt.Errorf("record format %d, not one this toolhost writes", v)
	}
	rec.Seq = d.uvarint()
	rec.Batch = d.string()
	switch kind := d.byte(); kind {
	case kindReads:
		r := &readsRecord{Conversation: d.string()}
		r.Reads = list(&d, func() Read { return Read{Path: d.string(), SHA256: d.string(), ReadAt: d.time()} })
		rec.Reads = r
	case kindStep:
		rec.Step = d.step()
	default:
		d.fail(fmt.Errorf("record kind %d", kind))
	}
	if d.err == nil && len(d.buf) > 0 {
		d.fail(errors.New("bytes after the record"))
	}
	return rec, d.err
}

// decoder reads a binary payload; the first error sticks and every read
// after it returns zero values.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.buf = nil
}

var errShort = errors.New("record cut short")

func (d *decoder) byte() byte {
	if len(d.buf) == 0 {
		d.fail(errShort)
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// count reads a number of bytes or items, each taking at least one byte:
// a count larger than what is left is damage.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.buf)) {
		d.fail(errShort)
		return 0
	}
	return int(n)
}

// list reads a count and that many items. It allocates for the items as
// they are read, not for the count: an item takes a few bytes of the
// record and a few hundred of memory, so room made for a damaged count
// would be a multiple of the record.
func list[T any](d *decoder, item func() T) []T {
	var s []T
	for n := d.count(); n > 0 && d.err == nil; n-- {
		v := item()
		if d.err == nil {
			s = append(s, v)
		}
	}
	return s
}

func (d *decoder) bytes() []byte {
	n := d.count()
	if n == 0 {
		return nil
	}
	b := append([]byte(nil), d.buf[:n]...)
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) string() string {
	n := d.count()
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

func (d *decoder) time() time.Time {
	if d.byte() == 0 {
		return time.Time{}
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail(errShort)
		return time.Time{}
	}
	d.buf = d.buf[n:]
	return time.Unix(0, v).UTC()
}

func (d *decoder) step() Step {
	var s Step
	flags := d.byte()
	s.End = flags&stepEnd != 0
	s.At = d.time()
	if flags&stepHasBatch != 0 {
		s.Batch = &Batch{ID: d.string(), Conversation: d.string(), Turn: d.string(), Created: d.time(), State: State(d.string()),
			Calls: list(d, d.call)}
	}
	s.Decisions = list(d, func() CallDecision {
		return CallDecision{CallID: d.string(), Verdict: Verdict(d.string()), By: d.string()}
	})
	s.Results = list(d, func() CallResult {
		id := d.string()
		return CallResult{CallID: id, Result: d.resultAfter(d.byte())}
	})
	s.Starts = list(d, d.string)
	return s
}

func (d *decoder) call() Call {
	c := Call{ID: d.string(), Tool: d.string(), Path: d.string(), Arguments: d.bytes(),
		Disposition: d.string(), Decision: Verdict(d.string()), DecidedBy: d.string()}
	if flags := d.byte(); flags&resultPresent != 0 {
		r := d.resultAfter(flags)
		c.Result = &r
	}
	return c
}

// resultAfter reads a result whose flags byte has been read.
func (d *decoder) resultAfter(flags byte) Result {
	return Result{OK: flags&resultOK != 0, Truncated: flags&resultTruncated != 0,
		Content: d.string(), ErrorKind: d.string(), ErrorMessage: d.string(), Finished: d.time()}
}

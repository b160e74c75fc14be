package journal

import "time"

// Coalescing folds the steps of a batch into the step that began it when
// the applier has them all at once, which is the rule while calls are
// quick: the batch row is written once, already done, and each call's row
// once, with its decision, start and result, instead of an insert and
// then an update for every start, result and end, each a b-tree search,
// a page rewritten and, for the end, an index entry written and removed.
// The transaction holds the same rows either way: the steps were checked
// by Commit against the batch, and they land in one transaction, so no
// reader sees a state between them.

// coalesce returns recs with every step on a batch begun in recs folded
// into the record that began it. recs is left as it was: a transaction
// that fails is tried again with the same records.
func coalesce(recs []logRecord) []logRecord {
	begun := map[string]*foldedBatch{}
	out := make([]logRecord, 0, len(recs))
	for _, rec := range recs {
		s := rec.Step
		switch f := begun[rec.Batch]; {
		case rec.Reads != nil:
			out = append(out, rec)
		case s.Batch != nil && f == nil:
			b := *s.Batch
			b.State = StateOpen
			b.Calls = append([]Call(nil), b.Calls...)
			for i := range b.Calls {
				b.Calls[i].Started = time.Time{} // set only by a start folded in
			}
			rec.Step = Step{Batch: &b, At: s.At}
			rec.folded = true
			out = append(out, rec)
			f = &foldedBatch{rec: &out[len(out)-1], calls: make(map[string]int, len(b.Calls))}
			for i, c := range b.Calls {
				f.calls[c.ID] = i
			}
			begun[rec.Batch] = f
			s.Batch = nil
			if !f.fold(s) {
				return recs
			}
		case f != nil:
			if !f.fold(s) {
				return recs
			}
		default:
			out = append(out, rec)
		}
	}
	return out
}

// foldedBatch is a batch's first record in the coalesced records, and
// where its calls are in it.
type foldedBatch struct {
	rec   *logRecord
	calls map[string]int
}

// fold adds s to the batch's record. It reports false for a step it
// cannot fold (a second batch, a call the batch lacks, a call started or
// finished twice: Commit refuses those, so only a log toolhost did not
// write has them), and then nothing is coalesced.
func (f *foldedBatch) fold(s Step) bool {
	b := f.rec.Step.Batch
	if s.Batch != nil || b.State == StateDone {
		return false
	}
	for _, d := range s.Decisions {
		i, ok := f.calls[d.CallID]
		if !ok {
			return false
		}
		b.Calls[i].Decision, b.Calls[i].DecidedBy = d.Verdict, d.By
	}
	for _, r := range s.Results {
		i, ok := f.calls[r.CallID]
		if !ok || b.Calls[i].Result != nil {
			return false
		}
		res := r.Result
		b.Calls[i].Result = &res
	}
	for _, id := range s.Starts {
		i, ok := f.calls[id]
		if !ok || b.Calls[i].Result != nil || !b.Calls[i].Started.IsZero() {
			return false
		}
		b.Calls[i].Started = s.At
	}
	if s.End {
		b.State = StateDone
		f.rec.Step.At = s.At
	}
	return true
}

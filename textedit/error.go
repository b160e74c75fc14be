package textedit

// Reason is why an edit was not made.
type Reason int

const (
	// Empty: old_string is empty; a new file is made with write_file.
	Empty Reason = iota + 1
	// NoChange: old_string equals new_string.
	NoChange
	// NotFound: no layer found old_string.
	NotFound
	// AlreadyApplied: old_string was not found but new_string was.
	AlreadyApplied
	// Ambiguous: a layer found old_string in several places.
	Ambiguous
	// BadRange: a line range outside the file.
	BadRange
	// Mismatch: a region's lines are not what the caller expected.
	Mismatch
	// Encoding: the file is not UTF-8 text.
	Encoding
)

// Error is an edit that was not made, with a message written for the
// model that asked: what was wrong and what to send instead.
type Error struct {
	Reason Reason
	Msg    string
	// Lines are the 1-based lines of every candidate of an Ambiguous
	// match, or the line of the closest region or of the text already
	// present.
	Lines []int
}

func (e *Error) Error() string { return e.Msg }

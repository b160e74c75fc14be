package textedit

// Layer is a step of the matching ladder. Each adds its normalization to
// those of the layers before it.
type Layer int

const (
	// Exact matches old_string byte for byte.
	Exact Layer = iota + 1
	// LineEndings matches CRLF and LF line endings as equal.
	LineEndings
	// TrailingSpace ignores spaces and tabs at the end of each line.
	TrailingSpace
	// Indentation ignores how each line is indented, as long as the
	// lines keep their indentation relative to each other (tabs for
	// spaces, a uniform shift); new_string is re-indented to match.
	Indentation
	// LineNumbers strips the prefixes a reader adds to each line:
	// toolhost's read_file line_numbers ("12→") and cat -n ("    12\t").
	LineNumbers
	// Punctuation folds typographic punctuation: curly quotes to
	// straight ones, en and em dashes to "-", NBSP to a space, "…" to "...".
	Punctuation
)

// Name is the layer's identifier in structured results.
func (l Layer) Name() string {
	switch l {
	case Exact:
		return "exact"
	case LineEndings:
		return "line_endings"
	case TrailingSpace:
		return "trailing_whitespace"
	case Indentation:
		return "indentation"
	case LineNumbers:
		return "line_numbers"
	case Punctuation:
		return "punctuation"
	}
	return "none"
}

// Phrase says how a match was found, for a result's sentence.
func (l Layer) Phrase() string {
	switch l {
	case Exact:
		return "exact match"
	case LineEndings:
		return "matched after normalizing line endings"
	case TrailingSpace:
		return "matched after ignoring trailing whitespace"
	case Indentation:
		return "matched after normalizing indentation"
	case LineNumbers:
		return "matched after stripping line-number prefixes"
	case Punctuation:
		return "matched after folding typographic punctuation"
	}
	return ""
}

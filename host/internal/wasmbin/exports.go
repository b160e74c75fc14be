package wasmbin

// Export is one entry of an export section. Its Kind is one of the import
// kinds (KindFunc, KindMemory, ...), which the spec shares between the two.
type Export struct {
	Name  string
	Kind  byte
	Index uint32 // into the index space of Kind
}

// Exports parses an export section.
func Exports(s Section) ([]Export, error) {
	r := s.Reader()
	n := r.Count()
	out := make([]Export, 0, n)
	for ; n > 0 && r.err == nil; n-- {
		out = append(out, Export{Name: r.Name(), Kind: r.Byte(), Index: r.U32()})
	}
	if r.err == nil && !r.Done() {
		r.Fail("%d trailing bytes", r.Remaining())
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

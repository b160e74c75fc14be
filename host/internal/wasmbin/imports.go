package wasmbin

// Import kinds, which exports share.
const (
	KindFunc   byte = 0x00
	KindTable  byte = 0x01
	KindMemory byte = 0x02
	KindGlobal byte = 0x03
	KindTag    byte = 0x04
)

// Import is one entry of an import section.
type Import struct {
	Module, Name string
	Kind         byte
	// Type is a function's or a tag's type index.
	Type uint32
}

// Imports parses an import section.
func Imports(s Section) ([]Import, error) {
	r := s.Reader()
	n := r.Count()
	out := make([]Import, 0, n)
	for ; n > 0 && r.err == nil; n-- {
		imp := Import{Module: r.Name(), Name: r.Name(), Kind: r.Byte()}
		switch imp.Kind {
		case KindFunc:
			imp.Type = r.U32()
		case KindTable:
			r.ValType()
			r.Limits()
		case KindMemory:
			r.Limits()
		case KindGlobal:
			r.ValType()
			r.Byte() // mutability
		case KindTag:
			r.Byte() // attribute
			imp.Type = r.U32()
		default:
			r.Unread()
			r.Fail("unknown import kind %#x", imp.Kind)
		}
		out = append(out, imp)
	}
	if r.err == nil && !r.Done() {
		r.Fail("%d trailing bytes", r.Remaining())
	}
	if r.err != nil {
		return nil, r.err
	}
	return out, nil
}

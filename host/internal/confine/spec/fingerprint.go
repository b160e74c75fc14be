package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
)

// Fingerprint identifies the protocol this binary speaks: the shape of
// every message (field names, types and JSON tags, recursively) and the
// status lines. A launcher binary other than toolhost's own (the small
// one installed beside it) is used only when its fingerprint is the
// host's, and its Revision too where both binaries recorded one: one
// that parsed a newer policy without knowing a field of it would confine
// less than the host asked.
func Fingerprint() string {
	var b strings.Builder
	for _, v := range []any{WarmMsg{}, LaunchersRequest{}, LaunchersReply{}, Applied{}} {
		describe(&b, reflect.TypeOf(v), 0)
	}
	fmt.Fprintf(&b, "%q %q %q %q %q %q %q %d %d %d %d", StatusConfined, StatusError, StatusExit, StatusSignal, WarmReady, WarmTaken, WarmPremounted, PolicyFD, StatusFD, CgroupFD, WarmFiles)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:12])
}

// Revision is the commit the binary was built from, with "+modified"
// for a tree with changes, or "" when the build did not record it (go
// test, -buildvcs=false).
func Revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "+modified"
	}
	return rev
}

// SameBuild reports whether a binary of fingerprint and revision may
// serve this one: the same protocol, and the same commit where both
// recorded theirs.
func SameBuild(fingerprint, revision string) bool {
	own := Revision()
	return fingerprint == Fingerprint() && (own == "" || revision == "" || own == revision)
}

// describe writes t's shape: a struct's fields with their tags, and the
// element types of slices, arrays, maps and pointers.
func describe(b *strings.Builder, t reflect.Type, depth int) {
	if depth > 16 {
		return
	}
	b.WriteString(t.String())
	switch t.Kind() {
	case reflect.Struct:
		b.WriteString("{")
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(b, "%s %q ", f.Name, f.Tag)
			describe(b, f.Type, depth+1)
			b.WriteString(";")
		}
		b.WriteString("}")
	case reflect.Slice, reflect.Array, reflect.Pointer:
		b.WriteString("[")
		describe(b, t.Elem(), depth+1)
		b.WriteString("]")
	case reflect.Map:
		b.WriteString("[")
		describe(b, t.Key(), depth+1)
		describe(b, t.Elem(), depth+1)
		b.WriteString("]")
	}
}

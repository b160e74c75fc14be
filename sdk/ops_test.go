package sdk

import (
	"testing"

	"github.com/toolhost/toolhost/abi"
)

// The operation builders make exactly the commit requests the host
// decodes: a move carries its source as data, the flags say the rest.
func TestCommitOperations(t *testing.T) {
	for _, tc := range []struct {
		got  abi.CommitFile
		want abi.CommitFile
	}{
		{Remove("a.txt", false), abi.CommitFile{Flags: abi.CommitDelete, Path: "a.txt"}},
		{Remove("dir", true), abi.CommitFile{Flags: abi.CommitDelete | abi.CommitRecursive, Path: "dir"}},
		{Move("a", "b/c", false), abi.CommitFile{Flags: abi.CommitMove, Path: "b/c", Data: []byte("a")}},
		{Move("a", "b", true), abi.CommitFile{Flags: abi.CommitMove | abi.CommitOverwrite, Path: "b", Data: []byte("a")}},
		{Mkdir("x/y"), abi.CommitFile{Flags: abi.CommitMkdir, Path: "x/y"}},
	} {
		req := abi.AppendCommitRequest(nil, []abi.CommitFile{tc.got})
		files, err := abi.DecodeCommitRequest(req)
		if err != nil {
			t.Fatal(err)
		}
		f := files[0]
		if f.Flags != tc.want.Flags || f.Path != tc.want.Path || string(f.Data) != string(tc.want.Data) {
			t.Errorf("decoded %+v, want %+v", f, tc.want)
		}
	}
}

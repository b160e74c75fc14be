package engine

import "testing"

func TestMintedID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{NewBatchID(), true},
		{NewBatchID() + ".1", true},
		{"batch_01a2210df85a2de5d88c.12", true},
		{"batch_01a2210df85a2de5d88c.", false},
		{"batch_01a2210df85a2de5d88c.x", false},
		{"batch_01a2210df85a2de5d88cX", false},
		{"batch_01a2210df85a2de5d8", false},
		{"batch_zz a2210df85a2de5d88c", false},
		{"call_1", false},
		{"mcp-3", false},
		{"batch_1", false},
		{"", false},
	} {
		if got := mintedID(tc.id); got != tc.want {
			t.Errorf("mintedID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

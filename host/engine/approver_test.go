package engine

import (
	"reflect"
	"testing"
)

// An operator's standing approval (--allow) covers calls of its tools,
// never a call only a person may approve (issue 10 item 2).
func TestPreapproved(t *testing.T) {
	cs := []Confirmation{
		{CallID: "1", Tool: "write_file"},
		{CallID: "2", Tool: "write_file", AlwaysAsk: true},
		{CallID: "3", Tool: "run_command"},
	}
	tests := []struct {
		tools    []string
		approved []string
		ask      []string
	}{
		{nil, nil, []string{"1", "2", "3"}},
		{[]string{"write_file"}, []string{"1"}, []string{"2", "3"}},
		{[]string{"write_file", "run_command"}, []string{"1", "3"}, []string{"2"}},
	}
	for _, tt := range tests {
		approved, ask := Preapproved(cs, tt.tools)
		var asked []string
		for _, c := range ask {
			asked = append(asked, c.CallID)
		}
		if !reflect.DeepEqual(approved, tt.approved) || !reflect.DeepEqual(asked, tt.ask) {
			t.Errorf("tools %v: approved %v, asked %v; want %v, %v", tt.tools, approved, asked, tt.approved, tt.ask)
		}
	}
}

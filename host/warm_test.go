package host

import (
	"slices"
	"testing"
)

func TestWarmOrder(t *testing.T) {
	tests := []struct {
		name  string
		tools []string
		want  []string
	}{
		{"first called ahead, in their order",
			[]string{"apply_patch", "delete_file", "list_directory", "read_file", "search"},
			[]string{"read_file", "list_directory", "search", "apply_patch", "delete_file"}},
		{"others keep the order given",
			[]string{"zeta", "alpha", "read_file", "mcp_tool"},
			[]string{"read_file", "zeta", "alpha", "mcp_tool"}},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			given := slices.Clone(tt.tools)
			if got := WarmOrder(tt.tools); !slices.Equal(got, tt.want) {
				t.Errorf("WarmOrder(%v) = %v, want %v", tt.tools, got, tt.want)
			}
			if !slices.Equal(tt.tools, given) {
				t.Errorf("WarmOrder changed its argument to %v", tt.tools)
			}
		})
	}
}

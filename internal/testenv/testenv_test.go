package testenv

import "testing"

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, require string
		want        bool
	}{
		{"", "", false},
		{"true", "", true},
		{"1", "", true},
		{"0", "", false},
		{"false", "", false},
		{"", "1", true},
		{"", "0", false},
		{"false", "yes", true},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv("TOOLHOST_REQUIRE_NODE", tc.require)
		if got := Required("node"); got != tc.want {
			t.Errorf("CI=%q TOOLHOST_REQUIRE_NODE=%q: Required = %v, want %v", tc.ci, tc.require, got, tc.want)
		}
	}
}

package proc

import (
	"slices"
	"strings"
	"testing"
)

// CFG-ENV-01: the default denylist strips credentials, matches names
// case-sensitively, and configured globs add to it.
func TestSanitizeEnv(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin",
		"MY_API_KEY=k",
		"GITHUB_TOKEN=t",
		"DB_PASSWORD=p",
		"APP_SECRET=s",
		"AWS_REGION=eu",
		"ANTHROPIC_BASE_URL=u",
		"OPENAI_ORG=o",
		"my_api_key=lower", // names are case-sensitive on Unix
		"KEY=bare",         // *_KEY needs the underscore
		"VALUE_HAS=AWS_X",  // only names are matched
		"CUSTOM_VAR=c",
		"NOEQUALS",
	}
	tests := []struct {
		name  string
		extra []string
		want  []string
	}{
		{"CFG-ENV-01/default", nil, []string{
			"PATH=/usr/bin", "my_api_key=lower", "KEY=bare", "VALUE_HAS=AWS_X", "CUSTOM_VAR=c", "NOEQUALS",
		}},
		{"CFG-ENV-01/additive", []string{"CUSTOM_*", "NOEQUALS"}, []string{
			"PATH=/usr/bin", "my_api_key=lower", "KEY=bare", "VALUE_HAS=AWS_X",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(environ)
			got := SanitizeEnv(environ, append(DefaultEnvDenylist(), tt.extra...))
			if !slices.Equal(got, tt.want) {
				t.Errorf("SanitizeEnv = %q, want %q", got, tt.want)
			}
			if !slices.Equal(environ, before) {
				t.Errorf("SanitizeEnv modified its input: %q", environ)
			}
		})
	}
}

func TestDefaultEnvDenylistFresh(t *testing.T) {
	a := DefaultEnvDenylist()
	a[0] = "changed"
	if b := DefaultEnvDenylist(); b[0] != "*_KEY" {
		t.Fatalf("DefaultEnvDenylist shares state: got %q after mutating a previous result", b[0])
	}
}

func TestValidateEnvDenylist(t *testing.T) {
	tests := []struct {
		globs   []string
		wantErr string // substring; "" means valid
	}{
		{DefaultEnvDenylist(), ""},
		{[]string{"FOO_[A-Z]*", "X?"}, ""},
		{[]string{"OK_*", "BAD_[", "ALSO_["}, `"BAD_["`},
		{[]string{"*[\\"}, `"*[\\"`},
		{[]string{"A", ""}, "empty"},
	}
	for _, tt := range tests {
		err := ValidateEnvDenylist(tt.globs)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("ValidateEnvDenylist(%q) = %v, want nil", tt.globs, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ValidateEnvDenylist(%q) = %v, want error containing %s", tt.globs, err, tt.wantErr)
		}
	}
}

// A bad glob that slipped past validation still removes its literal name
// rather than nothing.
func TestSanitizeEnvBadGlobIsLiteral(t *testing.T) {
	got := SanitizeEnv([]string{"A[=1", "B=2"}, []string{"A["})
	if want := []string{"B=2"}; !slices.Equal(got, want) {
		t.Errorf("SanitizeEnv = %q, want %q", got, want)
	}
}

package engine

import (
	"slices"
	"strings"
	"testing"
)

// FR-RES-04: the journal keeps arguments with secrets redacted: a key the
// name rules of commands' environment call secret loses its value, and a
// value of a credential's shape is redacted under any key; other
// arguments stay as the model sent them.
func TestRedactArgsByNameAndShape_FR_RES_04(t *testing.T) {
	e := New(Config{})
	tests := []struct {
		name, args, want string
	}{
		{"passphrase key", `{"passphrase":"correct horse"}`, `{"passphrase":"[REDACTED]"}`},
		{"webhook key", `{"webhook_url":"https://example.com/x"}`, `{"webhook_url":"[REDACTED]"}`},
		{"jwt key", `{"ci_jwt":"abc"}`, `{"ci_jwt":"[REDACTED]"}`},
		{"dsn key", `{"sentry_dsn":"https://k@o/1"}`, `{"sentry_dsn":"[REDACTED]"}`},
		{"token key, as before", `{"api_token":"abc"}`, `{"api_token":"[REDACTED]"}`},
		{"webhook value under an innocent key", `{"url":"https://hooks.slack.com/services/T0/B0/abc"}`, `{"url":"https://hooks.slack.com/services/[REDACTED]"}`},
		{"ordinary arguments", `{"path":"src/main.go","command":"go test ./...","pattern":"x"}`, `{"command":"go test ./...","path":"src/main.go","pattern":"x"}`},
		{"author is no auth", `{"author":"me"}`, `{"author":"me"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.TrimSpace(string(e.redactArgs([]byte(tt.args)))); got != tt.want {
				t.Errorf("redactArgs(%s) = %s, want %s", tt.args, got, tt.want)
			}
		})
	}
}

// A rule's needs only skips strings its regex cannot match: with and
// without it, every rule finds the same secrets.
func TestRedactionNeedsSkipsOnlyWhatCannotMatch(t *testing.T) {
	inputs := []string{
		"src/main.go", "stages.txt", "", "a b", "key=value",
		"Authorization: Bearer abcdefgh12345678", "token\tabcdefghijkl", "basic dXNlcjpwYXNzd29yZA==",
		"API_KEY=sk_live_123", "password: hunter22", `{"db_password":"x"}`, "PRIVATE-KEY= abc", "pwd=1",
		"https://user:pa55@example.com/x", "git clone ssh://git:secret@host/repo", "mailto:a@b", "x://u:p@",
		"TOKEN=abc; SECRET:def", "bearer\u00a0abcdefghijkl", "credential=\"quoted\"",
	}
	for _, rule := range newRedactor().rules {
		if rule.re == nil {
			continue
		}
		unfiltered := redaction{re: rule.re}
		for _, s := range inputs {
			if got, want := rule.spans(s), unfiltered.spans(s); !slices.Equal(got, want) {
				t.Errorf("%s on %q: %v with needs %q, %v without", rule.re, s, got, rule.needs, want)
			}
		}
	}
}

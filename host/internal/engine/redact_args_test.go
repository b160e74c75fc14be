package engine

import (
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

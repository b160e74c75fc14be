package e2e

import (
	"strings"
	"testing"
)

// The operator's configuration fixes the bearer
// token (never echoed; $TOOLHOST_TOKEN wins over it) and the hold.
func TestServeTokenFromConfig(t *testing.T) {
	const fileToken, envToken = "token-from-the-config-file", "token-from-the-environment"
	config := "[server]\ntoken = \"" + fileToken + "\"\n"
	tests := []struct {
		name  string
		env   []string
		token string
		from  string
	}{
		{"configuration", nil, fileToken, "bearer token: from server.token in the configuration"},
		{"environment wins", []string{"TOOLHOST_TOKEN=" + envToken}, envToken, "bearer token: from $TOOLHOST_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorkspace(t).withConfig(t, config).withEnv(tt.env...)
			hs := serveHTTP(t, w)
			out := hs.stderr.String()
			if !strings.Contains(out, tt.from) || strings.Contains(out, fileToken) || strings.Contains(out, envToken) {
				t.Errorf("start-up lines do not say where the token came from, or print it:\n%s", out)
			}
			for token, want := range map[string]int{tt.token: 200, "wrong-token-0123456789": 401} {
				status, _, text := hs.rawRequest(t, "GET", "/v1/batches", nil, 0, map[string][]string{"Authorization": {"Bearer " + token}})
				if status != want {
					t.Errorf("GET /v1/batches with %s: %d %s, want %d", token, status, text, want)
				}
			}
		})
	}
}

// A token in the configuration too short to be safe stops toolhost,
// naming the key and never the value.
func TestServeShortTokenInConfig(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[server]\ntoken = \"guessable\"\n")
	_, stderr, code := w.run(t, "serve", "--http", "127.0.0.1:0")
	if code != 2 || !strings.Contains(stderr, "server.token") || strings.Contains(stderr, "guessable") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming server.token without its value", code, stderr)
	}
}

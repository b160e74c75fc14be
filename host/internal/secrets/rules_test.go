package secrets

import (
	"encoding/base64"
	"strings"
	"testing"
)

func jwt(header string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(`{"sub":"x","exp":1}`)) + "." + enc([]byte("signature-bytes"))
}

// Every shape finds its credential in a realistic text, and only the
// credential: what redaction replaces is the secret, not its label.
func TestShapesFindTheirSecret(t *testing.T) {
	tests := []struct {
		shape, text, secret string
	}{
		{"private key block", "k=-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"},
		{"private key block", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQ", "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQ"},
		{"JSON Web Token", "Authorization: " + jwt(`{"alg":"HS256"}`), jwt(`{"alg":"HS256"}`)},
		{"connection string credential", "Server=db;User Id=sa;Password=Pa55;", "Pa55"},
		{"connection string credential", "Server=db;Uid=sa;Pwd=Pa55", "Pa55"},
		{"connection string credential", "AccountName=a;AccountKey=abc/+==;EndpointSuffix=x", "abc/+=="},
		{"connection string credential", "Endpoint=sb://n/;SharedAccessKeyName=r;SharedAccessKey=k0=", "k0="},
		{"HTTP Authorization header", "curl -H 'Authorization: Bearer opaqueToken0123456789' https://api.example", "Bearer opaqueToken0123456789"},
		{"HTTP authorization credential alone", "Basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==", "Basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA=="},
		{"shared access signature", "https://a.blob.example/c?sv=2020&sig=abcdefghijklmnop%3D", "abcdefghijklmnop%3D"},
		{"Slack webhook", "https://hooks.slack.com/services/T0/B0/secret", "T0/B0/secret"},
		{"Discord webhook", "https://discord.com/api/webhooks/123/tok_en", "123/tok_en"},
		{"Microsoft Teams webhook", "https://org.webhook.office.com/webhookb2/abc@def/IncomingWebhook/x/y", "abc@def/IncomingWebhook/x/y"},
		{"Google Chat webhook", "https://chat.googleapis.com/v1/spaces/AAA/messages?key=k&token=t", "key=k&token=t"},
		{"Telegram bot token", "https://api.telegram.org/bot123456789:AAabcdefghijklmnopqrstuvwxyz0123456/sendMessage", "123456789:AAabcdefghijklmnopqrstuvwxyz0123456"},
		{"chat or automation webhook", "https://hooks.zapier.com/hooks/catch/123456/abcdefghijklmnop", "123456/abcdefghijklmnop"},
		{"GitHub token", "token ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789abcdefghijABCDEFGHIJ012345"},
		{"GitHub token", "github_pat_11AAAAAAA0000000000000_abcdefghij", "github_pat_11AAAAAAA0000000000000_abcdefghij"},
		{"GitLab token", "glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789"},
		{"Slack token", "xoxb-123456789012-abcdefghij", "xoxb-123456789012-abcdefghij"},
		{"Anthropic key", "sk-ant-api03-abcdefghij0123456789", "sk-ant-api03-abcdefghij0123456789"},
		{"API key", "OPENAI=sk-proj-abcdefghij0123456789xyz", "sk-proj-abcdefghij0123456789xyz"},
		{"Stripe key", "sk_live_abcdefghij0123456789", "sk_live_abcdefghij0123456789"},
		{"AWS access key id", "id=AKIAABCDEFGHIJ012345 ", "AKIAABCDEFGHIJ012345"},
		{"Google API key", "AIzaSyA0123456789abcdefghijklmnopqrstuv", "AIzaSyA0123456789abcdefghijklmnopqrstuv"},
		{"npm token", "npm_abcdefghij0123456789abcdefghij012345", "npm_abcdefghij0123456789abcdefghij012345"},
		{"PyPI token", "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6", "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6"},
		{"Hugging Face token", "hf_abcdefghijABCDEFGHIJ0123456789ab", "hf_abcdefghijABCDEFGHIJ0123456789ab"},
		{"other service tokens", "dckr_pat_abcdefghij0123456789", "dckr_pat_abcdefghij0123456789"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.shape, func(t *testing.T) {
			var found []string
			for _, s := range Shapes() {
				if !strings.HasPrefix(s.Name, tt.shape) {
					continue
				}
				covered[s.Name] = true
				for _, sp := range s.Find(tt.text) {
					found = append(found, tt.text[sp[0]:sp[1]])
				}
			}
			if len(found) != 1 || found[0] != tt.secret {
				t.Errorf("%s in %q found %q, want [%q]", tt.shape, tt.text, found, tt.secret)
			}
		})
	}
	for _, s := range Shapes() {
		if !covered[s.Name] {
			t.Errorf("the shape %q has no case here", s.Name)
		}
	}
}

// Text builds and tools use every day is no credential: a value that
// merely resembles one must not lose a command its variable.
func TestShapesLeaveOrdinaryText(t *testing.T) {
	for _, text := range []string{
		"/usr/local/go/bin:/usr/bin:/bin", "-mod=mod -trimpath", "C.UTF-8", "-O2 -g",
		"0123456789abcdef0123456789abcdef01234567", // a git commit
		"sk-learn-classifier-pipeline",             // no digits
		"eyJub3QiOiJhIGp3dCJ9.eyJhIjoxfQ.x",        // JSON, but no "alg"
		"https://example.com/services/api/webhooks-guide",
		"postgres://db.example:5432/app?sslmode=disable",
		"/home/u/.cache/hf_hub/models", "AKIA-is-a-prefix", "pass=word without a separator before",
		"--max-old-space-size=4096", "GIT_ASKPASS=/usr/bin/ask",
		"Bearer", "bearer", "token", "Basic", "Authorization", // a scheme's name alone
		"Authorization: Bearer <token>", "Authorization: Bearer $GITHUB_TOKEN", "Authorization: token YOUR_TOKEN",
		"Authorization: Basic Authentication", "Authorization: Bearer followed by the token",
		"Send the header Authorization: Bearer, then your token.",
		"Use a Bearer token for every request.", "token expires after an hour",
		"Digest Authentication", "Bearer xxxxxxxxxxxx", "Bearer Authentication",
	} {
		if s, ok := Value(text); ok {
			t.Errorf("%q taken for a credential (%s)", text, s.Name)
		}
	}
}

// The name rules: what they hide, and the names builds need.
func TestNameRules(t *testing.T) {
	tests := []struct {
		name   string
		secret bool
	}{
		{"MYSQL_PWD", true}, {"PWD", false}, {"OLDPWD", false}, {"GPG_PASSPHRASE", true},
		{"CI_JOB_JWT", true}, {"SLACK_WEBHOOK_URL", true}, {"AZURE_STORAGE_CONNECTION_STRING", true},
		{"SENTRY_DSN", true}, {"GH_PAT", true}, {"GOOGLE_CREDS", true}, {"SESSION_COOKIE", true},
		{"PATH", false}, {"HOME", false}, {"GOFLAGS", false}, {"MANPATH", false}, {"GIT_ASKPASS", false},
		{"GIT_AUTHOR_NAME", false}, {"DSNAME", false}, {"LANG", false}, {"TMPDIR", false},
	}
	for _, tt := range tests {
		if r, ok := Name(tt.name); ok != tt.secret {
			t.Errorf("Name(%q) = %v, %v; want %v", tt.name, r, ok, tt.secret)
		}
	}
}

// HTTP authorization credentials (FR-EXE-06, CFG-ENV-01): a header
// however it is written (a git http.extraheader, curl's -H, JSON), or a
// value that is only a scheme and its credential; what is found is the
// scheme and the credential, never the header's name.
func TestAuthorizationShapes(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:ghs_notARealToken"))
	tests := []struct {
		text, secret string // secret "" means none is found
	}{
		{"Authorization: Bearer opaqueToken0123456789", "Bearer opaqueToken0123456789"},
		{"AUTHORIZATION: basic " + basic, "basic " + basic},
		{"Authorization: Basic " + strings.TrimRight(basic, "="), "Basic " + strings.TrimRight(basic, "=")},
		{"Authorization: token 0123456789abcdef", "token 0123456789abcdef"},
		{"Proxy-Authorization: Bearer abcdefghijklmnopqrstuvwxyz_ABC", "Bearer abcdefghijklmnopqrstuvwxyz_ABC"},
		{`{"headers":{"Authorization":"Bearer tok3n.value-01"}}`, "Bearer tok3n.value-01"},
		{`{"command":"curl -H \"Authorization: Bearer tok3nValue01\" https://x"}`, "Bearer tok3nValue01"},
		{"http.extraheader=Authorization: Bearer tok3nValue01", "Bearer tok3nValue01"},
		{`Authorization: Digest username="u", realm="r", nonce="n0", uri="/", response="6629fae49393a05397450978507c4ef1"`,
			`Digest username="u", realm="r", nonce="n0", uri="/", response="6629fae49393a05397450978507c4ef1"`},
		{"Bearer opaqueToken0123456789", "Bearer opaqueToken0123456789"},
		{"  token 0123456789abcdef  ", "token 0123456789abcdef"},
		{"first line\nBearer opaqueToken0123456789\r\nlast line", "Bearer opaqueToken0123456789"},
		// Not credentials.
		{"Bearer", ""},
		{"Authorization: Bearer", ""},
		{"Authorization: Bearer <token>", ""},
		{"Authorization: Bearer ${TOKEN}", ""},
		{"Authorization: Bearer YOUR_ACCESS_TOKEN_HERE", ""},
		{"Authorization: Basic Authentication", ""},
		{"Authorization: Basic dXNlcm5hbWU=", ""}, // "username", no password
		{"Authorization: Digest Authentication", ""},
		{"Authorization: token short1", ""},
		{"The token abcd1234 below the line is shown once.", ""},
		{"Bearer opaqueToken0123456789 is what the server returned", ""},
	}
	for _, tt := range tests {
		var found []string
		for _, s := range Shapes() {
			if !strings.HasPrefix(s.Name, "HTTP ") {
				continue
			}
			for _, sp := range s.Find(tt.text) {
				found = append(found, tt.text[sp[0]:sp[1]])
			}
		}
		switch {
		case tt.secret == "" && len(found) != 0:
			t.Errorf("%q: found %q, want nothing", tt.text, found)
		case tt.secret != "" && (len(found) != 1 || found[0] != tt.secret):
			t.Errorf("%q: found %q, want [%q]", tt.text, found, tt.secret)
		}
	}
}

package config

import (
	"slices"
	"strings"
	"testing"
)

// CFG-ENV-01, FR-EXE-06: what commands do not see. The SRD's globs, then
// secret-looking names anywhere in the name and credentials in values,
// which tools.environment.keep can bring back; the denylist always wins.
func TestSanitizeEnv_CFG_ENV_01(t *testing.T) {
	tests := []struct {
		name string
		env  Environment
		kv   string
		rule string // "" means the command sees it
	}{
		{"plain", Environment{}, "PATH=/usr/bin", ""},
		{"home", Environment{}, "HOME=/root", ""},
		{"working directory", Environment{}, "PWD=/w", ""},
		{"SRD glob", Environment{}, "MY_API_KEY=k", "denylist glob *_KEY"},
		{"SRD glob, any case", Environment{}, "my_api_key=k", "denylist glob *_KEY"},
		{"SRD prefix", Environment{}, "AWS_REGION=eu", "denylist glob AWS_*"},
		{"configured glob", Environment{Denylist: []string{"CORP_*"}}, "CORP_X=1", "denylist glob CORP_*"},
		{"keep cannot beat the denylist", Environment{Keep: []string{"AWS_REGION"}}, "AWS_REGION=eu", "denylist glob AWS_*"},
		{"password inside a name", Environment{}, "PGPASSWORD=pw", "secret-looking name (contains PASSWORD)"},
		{"passwd", Environment{}, "MYSQL_PASSWD=pw", "secret-looking name (contains PASSWD)"},
		{"token inside a name", Environment{}, "GITHUB_TOKENS=t", "secret-looking name (contains TOKEN)"},
		{"key inside a name", Environment{}, "STRIPE_KEY_LIVE=k", "secret-looking name (contains KEY)"},
		{"secret inside a name", Environment{}, "CLIENT_SECRET_ID=s", "secret-looking name (contains SECRET)"},
		{"credentials", Environment{}, "GOOGLE_APPLICATION_CREDENTIALS=/k.json", "secret-looking name (contains CREDENTIAL)"},
		{"auth", Environment{}, "NPM_AUTH=a", "secret-looking name (contains AUTH)"},
		{"oauth", Environment{}, "OAUTH_CLIENT=a", "secret-looking name (contains AUTH)"},
		{"authorization", Environment{}, "HTTP_AUTHORIZATION=Basic x", "secret-looking name (contains AUTH)"},
		{"git author is identity", Environment{}, "GIT_AUTHOR_NAME=A", ""},
		{"authors file", Environment{}, "AUTHORS=a", ""},
		{"author then a token", Environment{}, "GIT_AUTHOR_TOKEN=t", "denylist glob *_TOKEN"},
		{"personal access token", Environment{}, "GH_PAT=p", "secret-looking name (the word PAT)"},
		{"PATH is not PAT", Environment{}, "MANPATH=/m", ""},
		{"pass as a word", Environment{}, "DB_PASS=p", "secret-looking name (the word PASS)"},
		{"askpass is a program", Environment{}, "GIT_ASKPASS=/bin/ask", ""},
		{"pw as a word", Environment{}, "SMTP_PW=p", "secret-looking name (the word PW)"},
		{"ssh agent socket", Environment{}, "SSH_AUTH_SOCK=/run/agent", "secret-looking name (contains AUTH)"},
		{"ssh agent socket, kept", Environment{Keep: []string{"SSH_AUTH_SOCK"}}, "SSH_AUTH_SOCK=/run/agent", ""},
		{"keep is exact", Environment{Keep: []string{"ssh_auth_sock"}}, "SSH_AUTH_SOCK=/run/agent", "secret-looking name (contains AUTH)"},
		{"dsn without a scheme", Environment{}, "MYSQL_ADDR=root:pw@tcp(db:3306)/app", "value holds credentials (user:password@)"},
		{"dsn by name", Environment{}, "MYSQL_DSN=root:pw@tcp(db:3306)/app", "secret-looking name (the word DSN)"},
		{"mysql password", Environment{}, "MYSQL_PWD=pw", "secret-looking name (the word PWD in a longer name)"},
		{"pwd alone is the working directory", Environment{}, "PWD=/w", ""},
		{"oldpwd", Environment{}, "OLDPWD=/w", ""},
		{"passphrase", Environment{}, "GPG_PASSPHRASE=p", "secret-looking name (contains PASSPHRASE)"},
		{"jwt", Environment{}, "CI_JOB_JWT=x", "secret-looking name (contains JWT)"},
		{"webhook", Environment{}, "SLACK_WEBHOOK_URL=https://example.com/h", "secret-looking name (contains WEBHOOK)"},
		{"connection string", Environment{}, "DB_CONNECTION_STRING=Server=db", "secret-looking name (contains CONNECTION_STRING)"},
		{".NET connection strings", Environment{}, "ConnectionStrings__Default=Server=db", "secret-looking name (contains CONNECTIONSTRING)"},
		{"account key by value", Environment{}, "STORAGE=DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==", "value looks like a credential (connection string credential (Password=, Pwd=, AccountKey=, SharedAccessKey=))"},
		{"password by value", Environment{}, "DB=Server=db;User Id=sa;Password=pw;", "value looks like a credential (connection string credential (Password=, Pwd=, AccountKey=, SharedAccessKey=))"},
		{"slack webhook by value", Environment{}, "NOTIFY=https://hooks.slack.com/services/T0/B0/abcdef", "value looks like a credential (Slack webhook (hooks.slack.com/services/…))"},
		{"github token by value", Environment{}, "X=ghp_0123456789abcdefghijABCDEFGHIJ012345", "value looks like a credential (GitHub token (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_))"},
		{"github token, kept", Environment{Keep: []string{"X"}}, "X=ghp_0123456789abcdefghijABCDEFGHIJ012345", ""},
		{"GOFLAGS", Environment{}, "GOFLAGS=-mod=mod -trimpath", ""},
		{"a docs URL about webhooks", Environment{}, "DOCS=https://example.com/services/api/webhooks-guide", ""},
		{"a hyphenated word after sk-", Environment{}, "MODEL=sk-learn-classifier-pipeline", ""},
		{"a git commit", Environment{}, "COMMIT=0123456789abcdef0123456789abcdef01234567", ""},
		{"base64 JSON that is no JWT", Environment{}, "BLOB=eyJub3QiOiJhIGp3dCJ9.eyJhIjoxfQ.x", ""},
		{"CFLAGS", Environment{}, "CGO_CFLAGS=-O2 -g", ""},
		{"a path holding a prefix", Environment{}, "CACHE=/home/u/.cache/hf_hub/models", ""},
		{"url credentials, kept", Environment{Keep: []string{"DATABASE_URL"}}, "DATABASE_URL=postgres://u:pw@h/db", ""},
		{"url with a user name", Environment{}, "REPO=ssh://git@github.com/o/r.git", ""},
		{"url without credentials", Environment{}, "REPO_URL=https://github.com/o/r@v1", ""},
		{"empty password", Environment{}, "PROXY=http://user:@proxy:8080", ""},
		{"email address", Environment{}, "EMAIL=me@example.com", ""},
		{"scp-like git remote", Environment{}, "REMOTE=git@github.com:o/r.git", ""},
		{"host and port", Environment{}, "ADDR=localhost:8080", ""},
		{"no equals sign", Environment{}, "NOEQUALS", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			environ := []string{tt.kv}
			kept, removed := tt.env.Sanitize(environ)
			switch {
			case tt.rule == "" && (len(removed) != 0 || !slices.Equal(kept, environ)):
				t.Errorf("%s hidden: %+v", tt.kv, removed)
			case tt.rule != "" && (len(kept) != 0 || len(removed) != 1 || removed[0].Rule != tt.rule):
				t.Errorf("%s: kept %q, removed %+v, want rule %q", tt.kv, kept, removed, tt.rule)
			}
			for _, r := range removed {
				if _, value, _ := strings.Cut(tt.kv, "="); len(value) > 3 && strings.Contains(r.Name+r.Rule, value) {
					t.Errorf("the removal %+v shows the value", r)
				}
			}
		})
	}
}

// CFG-ENV-01: credentials in URLs are removed from the
// value, and the rest of it is kept: a proxy still works without the
// secret. In a proxy variable every user is a credential.
func TestSanitizeEnvStripsURLCredentials(t *testing.T) {
	const (
		password = "URL credentials removed from the value (scheme://user:password@)"
		token    = "URL credentials removed from the value (scheme://token@)"
		proxy    = "URL credentials removed from the value (scheme://user@ of a proxy)"
	)
	tests := []struct {
		name, kv, want, rule string
	}{
		{"url with a password", "DATABASE_URL=postgres://u:pw@h/db", "DATABASE_URL=postgres://h/db", password},
		{"url with a password only", "CACHE=redis://:pw@h:6379", "CACHE=redis://h:6379", password},
		{"url with a token as user", "REPORT_URL=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/1", "REPORT_URL=https://o1.ingest.sentry.io/1", token},
		{"url inside a longer value", "PIP_OPTS=--index-url https://me:s3cret@pypi.example/simple", "PIP_OPTS=--index-url https://pypi.example/simple", password},
		{"password holding @", "DB=mysql://u:p@ss@h/db", "DB=mysql://h/db", password},
		{"two urls", "MIRRORS=https://a:1@m1 https://b:2@m2", "MIRRORS=https://m1 https://m2", password},
		{"https proxy", "HTTPS_PROXY=http://u:p@proxy.example:8080", "HTTPS_PROXY=http://proxy.example:8080", password},
		{"proxy user alone", "http_proxy=http://tok@proxy", "http_proxy=http://proxy", proxy},
		{"socks proxy", "ALL_PROXY=socks5://u:p@h", "ALL_PROXY=socks5://h", password},
		{"proxy with an empty password", "https_proxy=http://user:@proxy:8080", "https_proxy=http://proxy:8080", proxy},
		{"proxy without credentials", "HTTP_PROXY=http://proxy:3128", "HTTP_PROXY=http://proxy:3128", ""},
		{"no proxy list", "NO_PROXY=localhost,.internal", "NO_PROXY=localhost,.internal", ""},
		{"user name outside a proxy", "REPO=ssh://git@github.com/o/r.git", "REPO=ssh://git@github.com/o/r.git", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, removed := Environment{}.Sanitize([]string{tt.kv})
			if !slices.Equal(kept, []string{tt.want}) {
				t.Errorf("kept %q, want %q", kept, tt.want)
			}
			switch {
			case tt.rule == "" && len(removed) != 0:
				t.Errorf("removed %+v, want nothing", removed)
			case tt.rule != "" && (len(removed) != 1 || removed[0].Rule != tt.rule || !removed[0].Stripped):
				t.Errorf("removed %+v, want one stripped by %q", removed, tt.rule)
			}
		})
	}
}

// Order is kept and the input is not modified.
func TestSanitizeEnvKeepsOrder(t *testing.T) {
	environ := []string{"B=1", "GH_TOKEN=t", "A=2", "PGPASSWORD=p", "C=3"}
	before := slices.Clone(environ)
	kept, removed := Environment{}.Sanitize(environ)
	if want := []string{"B=1", "A=2", "C=3"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	if len(removed) != 2 || removed[0].Name != "GH_TOKEN" || removed[1].Name != "PGPASSWORD" {
		t.Errorf("removed %+v", removed)
	}
	if !slices.Equal(environ, before) {
		t.Errorf("input modified: %q", environ)
	}
	a := DefaultEnvDenylist()
	a[0] = "changed"
	if DefaultEnvDenylist()[0] != "*_KEY" {
		t.Error("DefaultEnvDenylist shares state")
	}
}

// CFG-ENV-01: tools.environment.keep takes exact variable names, from the
// file or TOOLHOST_TOOLS_ENVIRONMENT_KEEP, and refuses one the denylist
// hides.
func TestEnvironmentKeep_CFG_ENV_01(t *testing.T) {
	l, err := Load(Options{Dir: t.TempDir(), Environ: []string{"TOOLHOST_TOOLS_ENVIRONMENT_KEEP=SSH_AUTH_SOCK, TOKENIZERS_PARALLELISM"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Config.Tools.Environment.Keep; !slices.Equal(got, []string{"SSH_AUTH_SOCK", "TOKENIZERS_PARALLELISM"}) {
		t.Errorf("keep %q", got)
	}
	tests := []struct{ keep, want string }{
		{"SSH_*", "not a variable name"},
		{"AWS_PROFILE", "denylist glob AWS_*"},
		{"MY_API_KEY", "denylist glob *_KEY"},
	}
	for _, tt := range tests {
		_, err := Load(Options{Dir: t.TempDir(), Environ: []string{"TOOLHOST_TOOLS_ENVIRONMENT_KEEP=" + tt.keep}})
		if err == nil || !strings.Contains(err.Error(), "tools.environment.keep") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("keep %s: err %v, want it to name the key and say %q", tt.keep, err, tt.want)
		}
	}
}

// config show lists every hidden variable and its rule, never a value.
func TestShowListsHiddenVariables_CFG_ENV_01(t *testing.T) {
	environ := []string{"HOME=/root", "GH_PAT=ghp_v4lue", "DATABASE_URL=postgres://u:pw-v4lue@h/db", "SSH_AUTH_SOCK=/run/agent", "TOOLHOST_TOOLS_ENVIRONMENT_KEEP=SSH_AUTH_SOCK"}
	l, err := Load(Options{Dir: t.TempDir(), Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	show := l.Show()
	for _, want := range []string{
		"#   GH_PAT: secret-looking name (the word PAT)\n",
		"#   DATABASE_URL: URL credentials removed from the value (scheme://user:password@)\n",
	} {
		if !strings.Contains(show, want) {
			t.Errorf("Show lacks %q:\n%s", want, show)
		}
	}
	for _, leak := range []string{"v4lue", "SSH_AUTH_SOCK:", "HOME:"} {
		if strings.Contains(show, leak) {
			t.Errorf("Show contains %q:\n%s", leak, show)
		}
	}
}

package config

import (
	"slices"
	"strings"
	"testing"
)

// gitTestSecret is in every credential below: no removal may show it.
const gitTestSecret = "opaqueSecret0123456789"

// FR-EXE-06, CFG-ENV-01: git's configuration in the environment is one
// group. A pair carrying a credential is dropped whole, the rest
// renumbered and GIT_CONFIG_COUNT set to match, so that git works with
// what is left; the KEY name rule does not hide GIT_CONFIG_KEY_n.
func TestSanitizeGitConfigPairs(t *testing.T) {
	const (
		header = "git config pair dropped (http.extraheader): http.*.extraheader sends a header, often Authorization, with every request"
		count1 = "set to 1, the git config pairs left, renumbered from 0"
	)
	abbrev := []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_VALUE_0=12"}
	tests := []struct {
		name    string
		env     Environment
		environ []string
		kept    []string
		removed map[string]string // name: rule
	}{
		{"the finding: a header pair and a harmless one", Environment{}, []string{
			"A=1", "GIT_CONFIG_COUNT=2",
			"GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=Authorization: Bearer " + gitTestSecret,
			"GIT_CONFIG_KEY_1=core.abbrev", "GIT_CONFIG_VALUE_1=12", "B=2",
		}, append(append([]string{"A=1"}, abbrev...), "B=2"), map[string]string{
			"GIT_CONFIG_COUNT": count1, "GIT_CONFIG_KEY_0": header, "GIT_CONFIG_VALUE_0": header,
		}},
		{"harmless pairs pass as they are", Environment{}, []string{
			"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_VALUE_0=12",
			"GIT_CONFIG_KEY_1=safe.directory", "GIT_CONFIG_VALUE_1=*",
		}, []string{
			"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_VALUE_0=12",
			"GIT_CONFIG_KEY_1=safe.directory", "GIT_CONFIG_VALUE_1=*",
		}, nil},
		{"pairs given out of order", Environment{}, []string{
			"GIT_CONFIG_VALUE_0=12", "GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_COUNT=1",
		}, abbrev, nil},
		{"the header pair last, under a URL", Environment{}, []string{
			"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_VALUE_0=12",
			"GIT_CONFIG_KEY_1=http.https://github.com/.extraheader", "GIT_CONFIG_VALUE_1=AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46" + gitTestSecret,
		}, abbrev, map[string]string{
			"GIT_CONFIG_COUNT":   "set to 1, the git config pairs left, renumbered from 0",
			"GIT_CONFIG_KEY_1":   "git config pair dropped (http.*.extraheader): http.*.extraheader sends a header, often Authorization, with every request",
			"GIT_CONFIG_VALUE_1": "git config pair dropped (http.*.extraheader): http.*.extraheader sends a header, often Authorization, with every request",
		}},
		{"credential helper", Environment{}, gitPairs("credential.helper", "store --file /tmp/"+gitTestSecret, "core.abbrev", "12"), abbrev,
			gitDropped(0, "git config pair dropped (credential.helper): credential.* names a credential helper or a user")},
		{"a password", Environment{}, gitPairs("sendemail.smtpPass", gitTestSecret, "core.abbrev", "12"), abbrev,
			gitDropped(0, "git config pair dropped (sendemail.smtppass): *.smtppass holds a password")},
		{"a token", Environment{}, gitPairs("hub.oauthtoken", gitTestSecret, "core.abbrev", "12"), abbrev,
			gitDropped(0, "git config pair dropped (hub.oauthtoken): *.oauthtoken holds a credential")},
		{"url rewrite holding a token", Environment{}, gitPairs("url.https://x-access-token:"+gitTestSecret+"@github.com/.insteadOf", "https://github.com/", "core.abbrev", "12"), abbrev,
			gitDropped(0, "git config pair dropped (url.*.insteadof): url.*.insteadOf rewrites remotes, often to a URL holding a token")},
		{"a value with credentials in a URL", Environment{}, gitPairs("remote.origin.url", "https://me:"+gitTestSecret+"@git.example/r.git", "core.abbrev", "12"), abbrev,
			gitDropped(0, "git config pair dropped (remote.*.url): its value holds a URL with a user or credentials (scheme://user@)")},
		{"a value of a token's shape", Environment{}, gitPairs("alias.pub", "!curl -H 'Authorization: Bearer "+gitTestSecret+"' https://x", "core.abbrev", "12"), abbrev,
			gitDropped(0, "git config pair dropped (alias.pub): its value looks like a credential (HTTP Authorization header (Authorization: Basic, Bearer, token or Digest and a credential))")},
		{"a key git cannot read", Environment{}, gitPairs("nodot", "x", "core.abbrev", "12"), abbrev,
			gitDropped(0, "git config pair dropped (a key git cannot read): not a key git can read (section.name), which stops git")},
		{"a value missing", Environment{}, []string{
			"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=user.name", "GIT_CONFIG_KEY_1=core.abbrev", "GIT_CONFIG_VALUE_1=12",
		}, abbrev, map[string]string{
			"GIT_CONFIG_COUNT": count1, "GIT_CONFIG_KEY_0": "git config pair dropped: GIT_CONFIG_VALUE_0 is missing, which stops git",
		}},
		{"more pairs than the count", Environment{}, []string{
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_VALUE_0=12", "GIT_CONFIG_KEY_1=x.y", "GIT_CONFIG_VALUE_1=" + gitTestSecret,
		}, abbrev, map[string]string{
			"GIT_CONFIG_KEY_1":   "git config pair beyond GIT_CONFIG_COUNT=1, which git does not read",
			"GIT_CONFIG_VALUE_1": "git config pair beyond GIT_CONFIG_COUNT=1, which git does not read",
		}},
		{"no count", Environment{}, []string{"GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_VALUE_0=12"}, nil, map[string]string{
			"GIT_CONFIG_KEY_0":   "git config pair without GIT_CONFIG_COUNT, which git does not read",
			"GIT_CONFIG_VALUE_0": "git config pair without GIT_CONFIG_COUNT, which git does not read",
		}},
		{"a count that is no number", Environment{}, []string{"GIT_CONFIG_COUNT=two", "GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_VALUE_0=12"}, nil, map[string]string{
			"GIT_CONFIG_COUNT":   "not a number, which stops git: dropped with its pairs",
			"GIT_CONFIG_KEY_0":   "git config pair whose GIT_CONFIG_COUNT is no number, which stops git",
			"GIT_CONFIG_VALUE_0": "git config pair whose GIT_CONFIG_COUNT is no number, which stops git",
		}},
		{"every pair dropped", Environment{}, []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=Authorization: Bearer " + gitTestSecret}, nil, map[string]string{
			"GIT_CONFIG_COUNT": "no git config pair left", "GIT_CONFIG_KEY_0": header, "GIT_CONFIG_VALUE_0": header,
		}},
		{"keep passes a pair", Environment{Keep: []string{"GIT_CONFIG_VALUE_0"}}, []string{
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=X-Trace: 1",
		}, []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraheader", "GIT_CONFIG_VALUE_0=X-Trace: 1"}, nil},
		{"the denylist wins", Environment{Denylist: []string{"GIT_CONFIG_*"}, Keep: []string{"GIT_CONFIG_VALUE_0"}}, []string{
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.abbrev", "GIT_CONFIG_VALUE_0=12",
		}, nil, map[string]string{
			"GIT_CONFIG_COUNT":   "denylist glob GIT_CONFIG_*",
			"GIT_CONFIG_KEY_0":   "git config pair whose GIT_CONFIG_COUNT is hidden (denylist glob GIT_CONFIG_*)",
			"GIT_CONFIG_VALUE_0": "git config pair whose GIT_CONFIG_COUNT is hidden (denylist glob GIT_CONFIG_*)",
		}},
		{"a name git does not read stays under the name rules", Environment{}, []string{"git_config_key_0=x"}, nil, map[string]string{
			"git_config_key_0": "secret-looking name (contains KEY)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, removed := tt.env.Sanitize(tt.environ)
			if !slices.Equal(kept, tt.kept) {
				t.Errorf("kept %q, want %q", kept, tt.kept)
			}
			got := map[string]string{}
			for _, r := range removed {
				if _, twice := got[r.Name]; twice {
					t.Errorf("%s removed twice", r.Name)
				}
				got[r.Name] = r.Rule
				if strings.Contains(r.Name+r.Rule, gitTestSecret) {
					t.Errorf("the removal %+v shows the secret", r)
				}
			}
			for name, rule := range tt.removed {
				if got[name] != rule {
					t.Errorf("%s: rule %q, want %q", name, got[name], rule)
				}
			}
			for name := range got {
				if _, ok := tt.removed[name]; !ok {
					t.Errorf("%s removed (%s), want it kept", name, got[name])
				}
			}
		})
	}
}

// gitPairs is GIT_CONFIG_COUNT and a pair for each key and value of kv.
func gitPairs(kv ...string) []string {
	out := []string{"GIT_CONFIG_COUNT=" + string(rune('0'+len(kv)/2))}
	for i := 0; i+1 < len(kv); i += 2 {
		n := string(rune('0' + i/2))
		out = append(out, "GIT_CONFIG_KEY_"+n+"="+kv[i], "GIT_CONFIG_VALUE_"+n+"="+kv[i+1])
	}
	return out
}

// gitDropped is what Sanitize reports when pair i of two is dropped by
// rule.
func gitDropped(i int, rule string) map[string]string {
	n := string(rune('0' + i))
	return map[string]string{
		"GIT_CONFIG_COUNT":    "set to 1, the git config pairs left, renumbered from 0",
		"GIT_CONFIG_KEY_" + n: rule, "GIT_CONFIG_VALUE_" + n: rule,
	}
}

// GIT_CONFIG_PARAMETERS, what `git -c` passes on: its entries are judged
// as the pairs are, those left written as they were.
func TestSanitizeGitConfigParameters(t *testing.T) {
	const header = "http.extraheader: http.*.extraheader sends a header, often Authorization, with every request"
	tests := []struct {
		name, value, seen, rule string // seen "" and rule set: hidden
	}{
		{"the finding", `'http.extraheader'='Authorization: Bearer ` + gitTestSecret + `' 'core.abbrev'='12'`, `'core.abbrev'='12'`,
			"1 of 2 git config entries dropped (" + header + ")"},
		{"old style key=value", `'http.extraheader=Authorization: Bearer ` + gitTestSecret + `' 'core.abbrev=12'`, `'core.abbrev=12'`,
			"1 of 2 git config entries dropped (" + header + ")"},
		{"every entry dropped", `'credential.helper'='store'`, "",
			"git config entries dropped (credential.helper: credential.* names a credential helper or a user)"},
		{"a quote inside a value", `'alias.q'='!echo it'\''s' 'core.abbrev'='12'`, `'alias.q'='!echo it'\''s' 'core.abbrev'='12'`, ""},
		{"a token after an escaped quote", `'alias.q'='!curl -H '\''Authorization: token ` + gitTestSecret + `'\''' 'core.abbrev'='12'`, `'core.abbrev'='12'`,
			"1 of 2 git config entries dropped (alias.q: its value looks like a credential (HTTP Authorization header (Authorization: Basic, Bearer, token or Digest and a credential)))"},
		{"a boolean", `'core.bare'= 'core.abbrev'='12'`, `'core.bare'= 'core.abbrev'='12'`, ""},
		{"white space between entries", "'core.abbrev'='12'\t 'http.extraheader'='Authorization: Bearer " + gitTestSecret + "'", `'core.abbrev'='12'`,
			"1 of 2 git config entries dropped (" + header + ")"},
		{"not quoted", `core.abbrev=12`, "", "not a list git can read ('key'='value' ...), which stops git"},
		{"unterminated", `'core.abbrev'='12`, "", "not a list git can read ('key'='value' ...), which stops git"},
		{"text after a value", `'core.abbrev'='12'x`, "", "not a list git can read ('key'='value' ...), which stops git"},
		{"empty", ``, ``, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kept, removed := Environment{}.Sanitize([]string{gitParameters + "=" + tt.value})
			switch {
			case tt.rule == "" && (len(removed) != 0 || !slices.Equal(kept, []string{gitParameters + "=" + tt.value})):
				t.Errorf("kept %q, removed %+v, want it as it is", kept, removed)
			case tt.rule != "" && tt.seen == "" && (len(kept) != 0 || len(removed) != 1 || removed[0].Rule != tt.rule || removed[0].Stripped):
				t.Errorf("kept %q, removed %+v, want it hidden by %q", kept, removed, tt.rule)
			case tt.rule != "" && tt.seen != "" && (!slices.Equal(kept, []string{gitParameters + "=" + tt.seen}) || len(removed) != 1 || removed[0].Rule != tt.rule || !removed[0].Stripped):
				t.Errorf("kept %q, removed %+v, want %q by %q", kept, removed, tt.seen, tt.rule)
			}
			for _, r := range removed {
				if strings.Contains(r.Rule, gitTestSecret) {
					t.Errorf("the removal %+v shows the secret", r)
				}
			}
		})
	}
}

// parseGitParameters reads what git writes for `git -c k=v` (sq_quote):
// the values come back as given.
func TestParseGitParameters(t *testing.T) {
	quote := func(s string) string {
		return "'" + strings.NewReplacer("'", `'\''`, "!", `'\!'`).Replace(s) + "'"
	}
	pairs := [][2]string{{"core.abbrev", "12"}, {"alias.x", "!echo 'hi' there"}, {"http.https://h/.sslVerify", "false"}}
	var text []string
	for _, p := range pairs {
		text = append(text, quote(p[0])+"="+quote(p[1]))
	}
	got, ok := parseGitParameters(strings.Join(text, " "))
	if !ok || len(got) != len(pairs) {
		t.Fatalf("parse %q: %+v, %v", strings.Join(text, " "), got, ok)
	}
	for i, p := range pairs {
		if got[i].key != p[0] || got[i].value != p[1] || got[i].raw != text[i] {
			t.Errorf("entry %d: %+v, want %q=%q from %q", i, got[i], p[0], p[1], text[i])
		}
	}
}

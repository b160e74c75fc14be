package hostile_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// svJWT is a token of JSON Web Token shape, its header naming an alg.
func svJWT() string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT","kid":"sv"}`)) + "." +
		enc([]byte(`{"sub":"svjob","iss":"ci.example","exp":4102444800}`)) + "." +
		enc([]byte("svSignatureBytes-0123456789abcdef"))
}

// svSecrets are variables that hold credentials: by name (the value
// plain text) or by value (the name innocent). secret is the text no
// command may see.
func svSecrets() []struct{ name, value, secret string } {
	return []struct{ name, value, secret string }{
		// Names the filter did not know.
		{"MYSQL_PWD", "svMysqlPw-hunter2", "svMysqlPw-hunter2"},
		{"GPG_PASSPHRASE", "sv correct horse battery", "sv correct horse battery"},
		{"CI_JOB_JWT", svJWT(), svJWT()},
		{"SENTRY_DSN", "https://svSentryPublicKey0123@o1.ingest.example/42", "svSentryPublicKey0123"},
		// Connection strings.
		{"AZURE_STORAGE_CONNECTION_STRING", "DefaultEndpointsProtocol=https;AccountName=svacct;AccountKey=c3ZBY2NvdW50S2V5MDEyMzQ1Njc4OQ==;EndpointSuffix=core.windows.net", "c3ZBY2NvdW50S2V5MDEyMzQ1Njc4OQ=="},
		{"DB_CONNECTION_STRING", "Server=db;Database=app;User Id=sa;Password=svPa55word;", "svPa55word"},
		{"SV_SQLSERVER", "Server=db;Database=app;Uid=sa;Pwd=svPwdValue9;", "svPwdValue9"},
		{"SV_BUS", "Endpoint=sb://ns.servicebus.example/;SharedAccessKeyName=root;SharedAccessKey=svSharedKey0123456789abc=", "svSharedKey0123456789abc="},
		// Webhooks whose path is the secret.
		{"SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T0SV00000/B0SV00000/svSlackHookSecret012345", "svSlackHookSecret012345"},
		{"SV_NOTIFY", "https://discord.com/api/webhooks/123456789012345678/svDiscordHookSecret_abcdefghij", "svDiscordHookSecret_abcdefghij"},
		// Credentials told by their value alone, under innocent names.
		{"SV_ID_TOKEN_LIKE", svJWT(), svJWT()},
		{"SV_DEPLOY_BLOB", "-----BEGIN OPENSSH PRIVATE KEY-----\nc3ZQcml2YXRlS2V5Qm9keQ==\n-----END OPENSSH PRIVATE KEY-----", "c3ZQcml2YXRlS2V5Qm9keQ=="},
		{"SV_GH", "ghp_sv0123456789abcdefghijklmnopqrstuvwx", "ghp_sv0123456789abcdefghijklmnopqrstuvwx"},
		{"SV_GH_FINE", "github_pat_11SV0000000000000000000_svFineGrainedToken0123456789", "svFineGrainedToken0123456789"},
		{"SV_GL", "glpat-svGitlab0123456789ab", "glpat-svGitlab0123456789ab"},
		{"SV_SLACKBOT", "xoxb-123456789012-1234567890123-svSlackBotToken0123", "svSlackBotToken0123"},
		{"SV_CLAUDE", "sk-ant-api03-svAnthropic0123456789abcdefghij", "svAnthropic0123456789abcdefghij"},
		{"SV_LLM", "sk-proj-svOpenai0123456789abcdefghijklmn", "svOpenai0123456789abcdefghijklmn"},
		{"SV_CLOUD_ID", "AKIASV0123456789ABCD", "AKIASV0123456789ABCD"},
		{"SV_MAPS", "AIzaSySv0123456789abcdefghijklmnopqrstu", "AIzaSySv0123456789abcdefghijklmnopqrstu"},
		{"SV_PUBLISH", "npm_sv0123456789abcdefghijklmnopqrstuvwx", "npm_sv0123456789abcdefghijklmnopqrstuvwx"},
		{"SV_UPLOAD", "pypi-AgEIcHlwaS5vcmcCJDsvUHlwaVRva2VuMDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1ub3A", "AgEIcHlwaS5vcmcCJDsvUHlwaVRva2VuMDEy"},
		{"SV_MODELS", "hf_svHuggingFace0123456789abcdefghijkl", "hf_svHuggingFace0123456789abcdefghijkl"},
	}
}

// svBenign are variables builds need: a command must see them as they
// are.
func svBenign(root string) []string {
	return []string{
		"GOFLAGS=-mod=mod -trimpath",
		"GIT_AUTHOR_NAME=Sv Author",
		"SV_DATABASE_URL=postgres://db.example:5432/app?sslmode=disable",
		"SV_DOCS=https://example.com/services/api/webhooks-guide",
		"SV_COMMIT=0123456789abcdef0123456789abcdef01234567",
		"NODE_OPTIONS=--max-old-space-size=4096",
		"CGO_CFLAGS=-O2 -g",
		"SV_SKLEARN=sk-learn-classifier",
		"SV_JSONISH=eyJub3QiOiJhIGp3dCJ9",
		"SV_CSV=a;b;c=d",
		"LANG=C.UTF-8",
		"PWD=" + root,
	}
}

// svEnv runs `env` through the binary, confined, with extra in the
// environment, and returns what the command printed.
func svEnv(t *testing.T, bin, root string, extra []string) string {
	t.Helper()
	home := t.TempDir()
	cfg := filepath.Join(home, "operator.toml")
	mustWrite(t, cfg, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", realPlugins(t),
		"call", "run_command", "--allow", "run_command", "--args", `{"command":"env"}`)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.Output()
	var r struct {
		OK      bool            `json:"ok"`
		Content string          `json:"content"`
		Error   json.RawMessage `json:"error"`
	}
	if jerr := json.Unmarshal(out, &r); jerr != nil || !r.OK {
		t.Fatalf("toolhost call run_command env: %v %v %s\n%s", err, jerr, r.Error, out)
	}
	return r.Content
}

// TestSecretValuesNeverReachCommands sets, in toolhost's environment,
// credentials the name filter did not know (a password in MYSQL_PWD, a
// connection string's AccountKey, a webhook URL, a CI job's JWT) and
// credentials under innocent names that only their values give away; a
// confined command's env must show none of them, while the variables
// builds need (PATH, HOME, GOFLAGS, PWD the working directory, ...) stay
// as they are.
func TestSecretValuesNeverReachCommands(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	bin := toolhostBinary(t)
	root := t.TempDir()
	var extra []string
	for _, s := range svSecrets() {
		extra = append(extra, s.name+"="+s.value)
	}
	benign := svBenign(root)
	extra = append(extra, benign...)
	got := svEnv(t, bin, root, extra)
	for _, s := range svSecrets() {
		if strings.Contains(got, s.secret) {
			t.Errorf("%s reached the command: its secret %q is in env's output", s.name, s.secret)
		}
	}
	lines := strings.Split(got, "\n")
	for _, kv := range benign {
		if !svContainsLine(lines, kv) {
			t.Errorf("%s did not reach the command as it is; env printed:\n%s", kv, got)
		}
	}
	if !strings.Contains(got, "\nPATH="+os.Getenv("PATH")+"\n") {
		t.Errorf("PATH did not reach the command as it is")
	}
	if !strings.Contains(got, "\nHOME=") {
		t.Errorf("HOME did not reach the command")
	}
}

// TestSecretRulesShownByConfigShow: `toolhost config show` lists every
// rule that hides a variable, the name rules and the value shapes, and
// says which rule hid each variable of its environment, never a value.
func TestSecretRulesShownByConfigShow(t *testing.T) {
	bin := toolhostBinary(t)
	home := t.TempDir()
	cmd := exec.Command(bin, "config", "show")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"SV_NOTIFY=https://hooks.slack.com/services/T0SV00000/B0SV00000/svSlackHookSecret012345",
		"SV_ID_TOKEN_LIKE="+svJWT(), "MYSQL_PWD=svMysqlPw-hunter2")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("toolhost config show: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"PWD", "PASSPHRASE", "JWT", "WEBHOOK", "CONNECTION_STRING", "DSN",
		"ghp_", "github_pat_", "glpat-", "xox", "sk-ant-", "AKIA", "AIza", "npm_", "pypi-", "hf_",
		"PRIVATE KEY", "AccountKey", "hooks.slack.com", "alg"} {
		if !strings.Contains(text, want) {
			t.Errorf("config show does not list the rule %q:\n%s", want, text)
		}
	}
	for _, name := range []string{"SV_NOTIFY", "SV_ID_TOKEN_LIKE", "MYSQL_PWD"} {
		if !svListed(text, name) {
			t.Errorf("config show does not say %s is hidden:\n%s", name, text)
		}
	}
	for _, secret := range []string{"svSlackHookSecret012345", "svMysqlPw-hunter2", svJWT()} {
		if strings.Contains(text, secret) {
			t.Errorf("config show printed the secret %q", secret)
		}
	}
}

// svListed reports whether show's list of hidden variables names name.
func svListed(show, name string) bool {
	return strings.Contains(show, fmt.Sprintf("#   %s: ", name))
}

func svContainsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}

// TestSecretValuesRedactedInJournal: the journal keeps each call's
// arguments with secrets redacted by the very shapes the environment
// filter hides variables by: a webhook URL, a JWT, a connection string's
// AccountKey and a token given in a command never reach
// `toolhost journal export`'s params.
func TestSecretValuesRedactedInJournal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	bin := toolhostBinary(t)
	root := t.TempDir()
	home := t.TempDir()
	cfg := filepath.Join(home, "operator.toml")
	mustWrite(t, cfg, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	secretsIn := []string{
		"svSlackHookSecret012345",
		svJWT(),
		"c3ZBY2NvdW50S2V5MDEyMzQ1Njc4OQ==",
		"ghp_sv0123456789abcdefghijklmnopqrstuvwx",
	}
	command := "true https://hooks.slack.com/services/T0SV00000/B0SV00000/" + secretsIn[0] +
		" " + secretsIn[1] + " 'AccountName=a;AccountKey=" + secretsIn[2] + "' " + secretsIn[3]
	flags := []string{"--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", realPlugins(t)}
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	run := exec.Command(bin, append(flags, "call", "run_command", "--allow", "run_command", "--args", fmt.Sprintf(`{"command":%q}`, command))...)
	run.Dir, run.Env = root, env
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("toolhost call run_command: %v\n%s", err, out)
	}
	export := exec.Command(bin, append(flags, "journal", "export", "--since", "24h")...)
	export.Dir, export.Env = root, env
	out, err := export.Output()
	if err != nil {
		t.Fatalf("toolhost journal export: %v\n%s", err, out)
	}
	var params string
	for _, line := range strings.Split(string(out), "\n") {
		var ev struct {
			Type   string          `json:"type"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "tool.call" {
			params += string(ev.Params)
		}
	}
	if !strings.Contains(params, "hooks.slack.com") {
		t.Fatalf("the journal holds no call to run_command:\n%s", out)
	}
	for _, s := range secretsIn {
		if strings.Contains(params, s) {
			t.Errorf("the journal's arguments hold the secret %q: %s", s, params)
		}
	}
}

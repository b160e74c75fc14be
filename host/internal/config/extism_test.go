package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// [extism.<name>] tables are checked like every other
// key: a misspelled field, a wrong type, a URL where a host goes, a bad
// pattern or a memory cap out of bounds stops Load naming the key; a
// table without max_memory_mib gets the default.
func TestExtismSection(t *testing.T) {
	tests := []struct {
		name, toml string
		key        string // "" for no error
		want       string
	}{
		{"defaults", "[extism.weather]\n", "", ""},
		{"unknown field", "[extism.weather]\nallowed_host = [\"a.example\"]\n", "extism.weather.allowed_host", "unknown key"},
		{"url", "[extism.weather]\nallowed_hosts = [\"https://api.example.com\"]\n", "extism.weather.allowed_hosts", "not a URL"},
		{"bad pattern", "[extism.weather]\nallowed_hosts = [\"[a-\"]\n", "extism.weather.allowed_hosts", "not a valid host pattern"},
		{"hosts not a list", "[extism.weather]\nallowed_hosts = \"a.example\"\n", "extism.weather.allowed_hosts", "a list of strings"},
		{"config value not a string", "[extism.weather]\nconfig = { port = 80 }\n", "extism.weather.config.port", "expected a string"},
		{"memory too small", "[extism.weather]\nmax_memory_mib = 4\n", "extism.weather.max_memory_mib", "between 16 and 4096"},
		{"not a table", "extism = 3\n", "extism", "expected a table"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "toolhost.toml", tt.toml)
			l, err := Load(Options{UserDir: dir, Dir: dir})
			if tt.key == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p := l.Config.Extism["weather"]; p.MaxMemoryMiB != DefaultExtismMaxMemoryMiB || p.AllowedHosts == nil || p.Config == nil {
					t.Errorf("defaults %+v", p)
				}
				return
			}
			var ke *KeyError
			if !errors.As(err, &ke) || ke.Key != tt.key || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "toolhost.toml") {
				t.Fatalf("error %v, want key %s saying %q and naming the file", err, tt.key, tt.want)
			}
		})
	}
}

// A trusted project file cannot grant
// an Extism plugin anything (hosts, config values, memory): the
// operator's tables stay, and the project's are reported as ignored.
func TestProjectCannotGrantExtism(t *testing.T) {
	ws, userDir := t.TempDir(), t.TempDir()
	writeFile(t, userDir, "toolhost.toml", "[extism.weather]\nallowed_hosts = [\"api.example.com\"]\n")
	writeFile(t, ws, "toolhost.toml", "[extism.weather]\nallowed_hosts = [\"*\"]\n[extism.other]\nconfig = { k = \"v\" }\n")
	if _, err := Trust(userDir, ws); err != nil {
		t.Fatal(err)
	}
	l, err := Load(Options{UserDir: userDir, Dir: ws})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Config.Extism) != 1 || !slices.Equal(l.Config.Extism["weather"].AllowedHosts, []string{"api.example.com"}) {
		t.Errorf("extism %+v, want the operator's table only", l.Config.Extism)
	}
	if !slices.ContainsFunc(l.Ignored, func(s string) bool { return strings.Contains(s, "extism: a project file cannot grant") }) {
		t.Errorf("ignored %q, want the project's [extism] reported", l.Ignored)
	}
}

// Config show lists [extism] keys with their source and
// never prints a config value (API keys live there).
func TestShowHidesExtismConfig(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "toolhost.toml", "[extism.Weather]\nallowed_hosts = [\"api.example.com\"]\nconfig = { API_KEY = \"sk-secret-value\" }\n")
	l, err := Load(Options{UserDir: dir, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	show := l.Show()
	for _, want := range []string{
		`extism.Weather.allowed_hosts = ["api.example.com"]  # file ` + file,
		`extism.Weather.config.API_KEY = "…"  # set, not shown  # file ` + file,
		`extism.Weather.max_memory_mib = 64  # file ` + file,
	} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	if strings.Contains(show, "sk-secret-value") {
		t.Errorf("show prints a config value:\n%s", show)
	}
}

package extism_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/tests/extism"
)

// NFR-SEC-01: a plugin's input schema cannot make
// toolhost read a file. The JSON Schema compiler loads file:// references
// from the host's disk, so a $ref (or a $schema, or a $ref resolved
// against an $id) naming a file outside would be read when the plugin
// loads, and a secret file shaped like a schema would come back to the
// model in argument errors. Such a schema is refused at load, naming the
// plugin, the tool and the reference; nothing outside is read.
func TestSchemaReadsNoHostFile(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"const": "TOPSECRET-7d1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := "file://" + filepath.ToSlash(secret)
	for name, schema := range map[string]string{
		"ref":    fmt.Sprintf(`{"type":"object","properties":{"x":{"$ref":%q}}}`, ref),
		"schema": fmt.Sprintf(`{"$schema":%q,"type":"object"}`, ref),
		"id":     fmt.Sprintf(`{"$id":%q,"type":"object","properties":{"x":{"$ref":"secret.json"}}}`, "file://"+filepath.ToSlash(dir)+"/"),
	} {
		t.Run(name, func(t *testing.T) {
			cfg := defaultConfig(t)
			grant(cfg, "misbehave", nil, map[string]string{"extra_tool": "peek", "extra_schema": schema})
			h, err := tryOpen(t, cfg, "", guest{extism.Misbehave, "misbehave.wasm"})
			if err == nil {
				r := run(t, h, "p1", "peek", `{"x": "guess"}`, nil)
				h.Close(t.Context())
				t.Fatalf("a schema referring to %s loaded; a call returned %q", secret, r.Content+errorOf(r))
			}
			for _, w := range []string{"misbehave.wasm", `"peek"`, "secret.json", "inline it"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

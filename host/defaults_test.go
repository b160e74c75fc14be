package host

import (
	"reflect"
	"testing"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// The SRD's defaults (2.7, 6.1-6.9) are written twice: in config.Default,
// which the command line and Open use, and in the engine's Default*
// functions, which an engine built without a configuration falls back
// to. config is a leaf that imports no toolhost package, so neither can
// derive from the other without inverting a dependency; this test, the one
// place that sees both, keeps them equal.
func TestEngineDefaultsAreTheConfigDefaults(t *testing.T) {
	st, err := fromConfig(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	got := st.engine
	if want := engine.DefaultLimits(); got.Limits != want {
		t.Errorf("limits: config %+v, engine %+v", got.Limits, want)
	}
	if want := engine.DefaultTimeouts(); got.Timeouts != want {
		t.Errorf("timeouts: config %+v, engine %+v", got.Timeouts, want)
	}
	if got.MaxArgsBytes != engine.DefaultMaxArgsBytes {
		t.Errorf("max_tool_args_bytes: config %d, engine %d", got.MaxArgsBytes, engine.DefaultMaxArgsBytes)
	}
	pol := got.Policy
	if len(pol.Overrides) == 0 {
		pol.Overrides = nil // no overrides either way
	}
	if want := engine.DefaultPolicy(); !reflect.DeepEqual(pol, want) {
		t.Errorf("policy:\nconfig %+v\nengine %+v", pol, want)
	}
	if len(got.EnvDenylist) != 0 || len(got.EnvKeep) != 0 {
		t.Errorf("environment: config adds %v and keeps %v by default; the defaults are config.DefaultEnvDenylist alone", got.EnvDenylist, got.EnvKeep)
	}
}

package host

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// settings are the configuration in the shapes the host packages take.
type settings struct {
	sandbox sandbox.Config
	engine  engine.Config
}

func fromConfig(c *config.Config) (settings, error) {
	t := c.Tools
	pol := engine.Policy{
		Mode:                  t.Mode,
		Disabled:              !t.Approval.Enabled,
		Approval:              t.Approval.Mode,
		Allowlist:             t.Approval.Allowlist,
		Denylist:              t.Approval.Denylist,
		SideEffectsUnprompted: !t.Approval.PromptSideEffects,
		AutoApproveNewFiles:   t.Approval.AutoApproveNewFiles,
		CodePatterns:          t.Approval.CodePatterns,
		MaxCallsPerBatch:      t.MaxToolCallsPerBatch,
		MaxIterationsPerTurn:  t.MaxToolIterationsPerUserTurn,
		AllowParallel:         t.AllowParallel,
		Overrides:             map[string]engine.Override{},
	}
	for name, o := range t.Overrides {
		eo := engine.Override{RequiresApproval: o.RequiresApproval}
		if o.TimeoutSeconds != nil {
			eo.Timeout = time.Duration(*o.TimeoutSeconds) * time.Second
		}
		if o.Denied != nil {
			eo.Denied = *o.Denied
		}
		pol.Overrides[name] = eo
	}
	for _, d := range t.Definitions {
		params, err := json.Marshal(d.Parameters)
		if err != nil {
			return settings{}, fmt.Errorf("configuration: tools.definitions %s: parameters: %v", d.Name, err)
		}
		pol.Definitions = append(pol.Definitions, abi.Manifest{ABI: abi.Version, Name: d.Name, Description: d.Description, Parameters: params, RiskLevel: abi.RiskMedium})
	}
	return settings{
		sandbox: sandbox.Config{
			Roots: t.Sandbox.AllowedRoots, DeniedPatterns: t.Sandbox.DeniedPatterns,
			IncludeDefaultDenies: t.Sandbox.IncludeDefaultDenies, AllowAbsolute: t.Sandbox.AllowAbsolute,
			ReadOnlyPatterns: t.Sandbox.ReadOnlyPatterns,
			MaxPathBytes:     t.Sandbox.MaxPathBytes, MaxComponentBytes: t.Sandbox.MaxPathComponentBytes, MaxDepth: t.Sandbox.MaxPathDepth,
		},
		engine: engine.Config{
			Limits: abi.Limits{
				MaxOutputBytes: int64(t.Output.MaxBytes), AvailableCapacityBytes: int64(t.Output.AvailableCapacityBytes),
				MaxFileReadBytes: int64(t.ReadFile.MaxFileReadBytes), MaxScanBytes: int64(t.ReadFile.MaxScanBytes),
				MaxPatchBytes: int64(t.ApplyPatch.MaxPatchBytes),
			},
			MaxArgsBytes: t.MaxToolArgsBytes,
			Timeouts: engine.Timeouts{
				Default:        time.Duration(t.Timeouts.DefaultSeconds) * time.Second,
				FileOperations: time.Duration(t.Timeouts.FileOperationsSeconds) * time.Second,
				ShellCommands:  time.Duration(t.Timeouts.ShellCommandsSeconds) * time.Second,
			},
			EnvDenylist:       t.Environment.Denylist,
			EnvKeep:           t.Environment.Keep,
			MaxCommitFiles:    t.ApplyPatch.MaxFiles,
			Policy:            pol,
			ExecMaxTimeout:    time.Duration(t.RunCommand.MaxTimeoutMS) * time.Millisecond,
			NonInteractiveEnv: t.RunCommand.NonInteractiveEnv,
		},
	}, nil
}

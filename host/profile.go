package host

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// Profile is the narrowing the configuration's profile name stands for:
// only its tools, under its stricter modes. A profile
// can only narrow: a tool the policy denies stays denied, and an
// approval mode below the policy's keeps the policy's.
func Profile(c *Config, name string) (Narrowing, error) {
	p, ok := c.Profiles[name]
	if !ok {
		return engine.Narrowing{}, fmt.Errorf("no profile %q in the configuration; %s", name, profilesHint(c))
	}
	return engine.Narrowing{
		Mode:             p.Mode,
		Approval:         p.Approval,
		Tools:            append([]string{}, p.Tools...),
		ConfirmAll:       p.ConfirmAll,
		Sequential:       p.Sequential,
		MaxCallsPerBatch: p.MaxToolCallsPerBatch,
		CommandSandbox:   p.Sandbox,
		CommandNetwork:   p.Network,
	}, nil
}

// ProfileNames lists the configuration's profiles, sorted.
func ProfileNames(c *Config) []string {
	names := make([]string, 0, len(c.Profiles))
	for name := range c.Profiles {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func profilesHint(c *config.Config) string {
	names := ProfileNames(c)
	if len(names) == 0 {
		return "none is defined: add a [profiles.NAME] table with tools = [...] to the operator's configuration (toolhost config init shows examples)"
	}
	return "the profiles are " + strings.Join(names, ", ")
}

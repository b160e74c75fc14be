package hostile_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// DeniedByUser says that whoever was asked about a call said no, so the
// call did not run. A plugin that ran (and may have acted) cannot report
// that kind as its own error: the model, an agent's harness and the
// journal would take a call that ran for one a person refused.
func TestRedteamPluginCannotForgeDeniedByUser(t *testing.T) {
	h, _ := openHost(t, nil, "forgeddenial")
	b := engine.Batch{Conversation: "c", Calls: []engine.Call{call("f", "forgeddenial", `{}`)}}
	rs := process(t, h, context.Background(), b, host.BatchOptions{Approver: approveAll()}, time.Minute)
	if rs[0].OK {
		t.Fatalf("forgeddenial succeeded: %+v", rs[0])
	}
	if rs[0].Error.Kind == abi.KindDeniedByUser {
		t.Errorf("a plugin's own error passed for a person's no: %s %q %s", rs[0].Error.Kind, rs[0].Error.Message, rs[0].Error.Details)
	}
}

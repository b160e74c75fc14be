package engine

import (
	"context"

	"github.com/toolhost/toolhost/host/internal/hostfn"
)

// Access is one host function a plugin called during a batch, as the host
// saw it (RunOptions.Observe): `toolhost test` judges a plugin by what it
// attempted, not by what it says it does.
type Access struct {
	CallID   string
	Function string // the host function, e.g. "fs_read"
	// Path is the path as the plugin passed it: an fs_* function's file
	// (one Access per file of an fs_commit), proc_run's working directory
	// ("" for the root); "" for event_emit.
	Path string
	// Err is the host's refusal or failure; nil when it did what was
	// asked.
	Err error
	// Denial is the sandbox's reason when it refused Path (an
	// abi.DenialReason such as "PathOutsideSandbox" or "Traversal").
	Denial string
	// Summary marks an attempt while the call's approval summary was
	// computed (SRD FR-REG-01a): the host refused it before it ran.
	Summary bool
}

// Output is the size of what a plugin returned for a call, before the
// host sanitized or cut it (RunOptions.ObserveOutput).
type Output struct {
	CallID string
	// Bytes is the length of the plugin's result (its content and its
	// structured object, or its error's message) as far as the host read
	// it: of each of the two a toolhost/v1 plugin returns it reads at most
	// twice Limit and 4 KiB, so a longer one counts as that.
	Bytes int
	// Limit is the call's output limit: min(max_output_bytes, the room
	// left in the model's context) (FR-REG-04b).
	Limit int
	// NoTruncate is the plugin's claim that it kept within Limit itself
	// (abi.ResultNoTruncate).
	NoTruncate bool
}

func accessOf(a hostfn.Access) Access {
	return Access{CallID: a.CallID, Function: a.Function, Path: a.Path, Err: a.Err, Denial: a.Denial, Summary: a.Summary}
}

type observeKey struct{}

// withObserve returns ctx carrying obs for the summaries Plan asks for.
func withObserve(ctx context.Context, obs func(Access)) context.Context {
	if obs == nil {
		return ctx
	}
	return context.WithValue(ctx, observeKey{}, obs)
}

// summaryObserved returns ctx set up so that what call id's summary
// attempts reaches the observer withObserve put in ctx, if any.
func summaryObserved(ctx context.Context, id string) context.Context {
	obs, _ := ctx.Value(observeKey{}).(func(Access))
	if obs == nil {
		return ctx
	}
	return hostfn.WithObserver(ctx, func(a hostfn.Access) {
		a.CallID = id
		obs(accessOf(a))
	})
}

// callObserver is the hostfn observer of a call's accesses, nil when
// nobody observes.
func callObserver(obs func(Access)) hostfn.Observer {
	if obs == nil {
		return nil
	}
	return func(a hostfn.Access) { obs(accessOf(a)) }
}

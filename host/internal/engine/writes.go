package engine

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// writeGrants is what a call may write (hostfn.Env.Writes), keyed by
// canonical absolute path, so that the host functions hold a plugin to
// what approval covered:
//   - a tool without fs.write or fs.delete writes nothing (a removal
//     or a move writes both its paths: move_file's source and
//     destination are both path arguments, and both granted);
//   - a tool that declares writes_unnamed_paths (apply_patch) writes
//     wherever the sandbox allows: the planner never approves it as only
//     creating files, so it runs only because a person confirmed the call
//     or the configuration lets the tool's side effects run unasked;
//   - otherwise the call writes only the paths its create_args name, or,
//     for a tool without create_args, its path_args (every string their
//     selectors reach, inside arrays too): create-only when the
//     call was planned as creating them all (creates), so a file that
//     appears before it writes is not replaced unasked; replace-or-create
//     otherwise.
func writeGrants(m abi.Manifest, decoded any, resolved map[string]sandbox.Path, creates bool) map[string]hostfn.WriteGrant {
	if !slices.Contains(m.Capabilities, abi.CapFSWrite) && !slices.Contains(m.Capabilities, abi.CapFSDelete) {
		return map[string]hostfn.WriteGrant{}
	}
	if m.WritesUnnamedPaths {
		return nil
	}
	grant := hostfn.WriteAny
	if creates {
		grant = hostfn.WriteCreateOnly
	}
	found := pathArgs(writeArgs(m), decoded)
	grants := make(map[string]hostfn.WriteGrant, len(found))
	for _, f := range found {
		if f.Absent {
			continue
		}
		if p, ok := resolved[argText(f)]; ok {
			grants[p.Abs] = grant
		}
	}
	return grants
}

// stillNew refuses a call that was planned as only creating files when
// one of them exists by the time it runs: an earlier call of the batch
// created it, and approval (a person's, or auto_approve_new_files)
// covered creating the file, not replacing what that call wrote. The host
// functions refuse such a write too; this says why before the plugin runs.
func (e *Engine) stillNew(pc *PlannedCall) *ToolError {
	attempted := make([]string, 0, len(pc.resolved))
	for a := range pc.resolved {
		attempted = append(attempted, a)
	}
	slices.Sort(attempted)
	for _, a := range attempted {
		p := pc.resolved[a]
		if g, ok := pc.writes[p.Abs]; !ok || g != hostfn.WriteCreateOnly {
			continue
		}
		if _, err := p.Lstat(); err != nil {
			continue // still absent, or unreadable: the write itself decides
		}
		details, _ := json.Marshal(map[string]string{"path": a, "reason": "created since approval"})
		return &ToolError{Kind: abi.KindStaleFile, Details: details, Message: fmt.Sprintf(
			"call %s (%s) was not run: it was approved to create %s as a new file, but %s exists now (an earlier call in this batch created it), and replacing it was never approved; nothing was changed. "+
				"To replace it, read %s and send the write again in a later batch, where it will be asked about", pc.Call.ID, pc.Call.Name, a, a, a)}
	}
	return nil
}

// stillNotGit refuses a call that, when it was planned, laid out no git
// directory but would now: another batch wrote objects/ and refs/ (or a
// HEAD) beside its files while it waited for a decision. Whatever covered
// it then (a new file, an allowlisted tool, --allow, a person's answer
// to a question that did not say so) was no person's approval of writing
// into a git directory.
func stillNotGit(pc *PlannedCall) *ToolError {
	if pc.gitAsked || pc.dryRun || len(pc.layout.paths) == 0 {
		return nil
	}
	why := gitLayout(pc.layout, movedTrees(pc.layout, batchWrites{}), batchWrites{})
	if why == "" {
		return nil
	}
	details, _ := json.Marshal(map[string]string{"reason": "git directory since planning"})
	return &ToolError{Kind: abi.KindStaleFile, Details: details, Message: fmt.Sprintf(
		"call %s (%s) was not run: since it was planned, %s; nothing was changed. Send it again in a later batch, where a person will be asked about it", pc.Call.ID, pc.Call.Name, why)}
}

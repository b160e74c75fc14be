package confine

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// A rebase, cherry-pick or revert the command stopped (at a break, a
// conflict) leaves in the git directory what the operator's git
// --continue carries on with: the to-do list, whose exec lines git runs
// as shell commands, and the merge strategy, which git runs as the
// program git-merge-<name> when it is not one of its own. Both are
// applied from the stage with what would run a program disabled:
// exec lines turned into comments (git skips them), a strategy that is
// not git's own not applied. The output says so and names them.

// stateDirs are the directories of an operation's state that git
// --continue reads.
var stateDirs = []string{"rebase-merge", "rebase-apply", "sequencer"}

// builtinStrategies are the merge strategies git runs itself; any other
// name makes it run git-merge-<name> from PATH, or from a path relative
// to the work tree when the name holds a slash.
var builtinStrategies = []string{"ort", "recursive", "resolve", "octopus", "ours", "subtree"}

// maxStateFile bounds a state file read to check it: a to-do list of a
// rebase of a hundred thousand commits is some 6 MB.
const maxStateFile = 64 << 20

// stateFilter returns the check of the state file rel (a path in a git
// directory) that git --continue reads and that can make it run a
// program, nil for any other file. The check returns what to write, a
// sentence for the output when it changed or refused anything, and
// whether to write it at all.
func stateFilter(rel string) func([]byte) ([]byte, string, bool) {
	dir := filepath.Dir(rel)
	if !slices.Contains(stateDirs, filepath.Base(dir)) {
		return nil
	}
	// At the top of the git directory, or of a linked worktree's or
	// submodule's git directory inside it; never in refs/.
	if up := filepath.Dir(dir); up != "." && !strings.HasPrefix(rel, "worktrees/") && !strings.HasPrefix(rel, "modules/") {
		return nil
	}
	switch filepath.Base(rel) {
	case "git-rebase-todo", "git-rebase-todo.backup", "todo":
		return disableExec
	case "strategy":
		return checkStrategy
	case "opts":
		return disableOptsStrategy
	case "apply-opt":
		return checkApplyOpt
	}
	return nil
}

// applyOptKept is what git am writes in rebase-apply/apply-opt: the
// options it was given for git apply, each shell-quoted. Any other
// option there is passed to the apply of the operator's git am
// --continue or --skip, and some write files (--build-fake-ancestor
// names a path anywhere).
var applyOptKept = regexp.MustCompile(`^(\s*'(--whitespace=[a-z-]+|-C[0-9]+|-p[0-9]+|--reject|--ignore-whitespace|--ignore-space-change|--directory=[^'/][^']*|--exclude=[^']*|--include=[^']*)')*\s*$`)

// checkApplyOpt keeps an apply-opt (rebase-apply/apply-opt) holding only
// the options git am itself writes there, and refuses any other.
func checkApplyOpt(data []byte) ([]byte, string, bool) {
	if applyOptKept.Match(data) {
		return data, "", true
	}
	return nil, fmt.Sprintf("the options for git apply the command wrote in rebase-apply/apply-opt (%s) were not applied: git am --continue would pass them to git apply, and some write files anywhere; only --whitespace, -C, -p, --reject, --ignore-whitespace, --ignore-space-change, --directory, --exclude and --include are kept", stateClip(string(data))), false
}

// execPrefix begins each exec line disabled.
const execPrefix = "# disabled by toolhost, a sandboxed command wrote it: "

// disableExec turns each exec (x) line of a to-do list into a comment.
// Git matches the command name after spaces and tabs, followed by
// whitespace or the end of the line; the name is compared here in any
// case, which git does not, so nothing it would run is missed.
func disableExec(data []byte) ([]byte, string, bool) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var disabled []string
	for i, l := range lines {
		t := bytes.TrimLeft(l, " \t")
		word := t
		if n := bytes.IndexAny(t, " \t\r\n\x00"); n >= 0 {
			word = t[:n]
		}
		if w := strings.ToLower(string(word)); w != "exec" && w != "x" {
			continue
		}
		disabled = append(disabled, string(bytes.TrimRight(t, "\r\n")))
		lines[i] = append([]byte(execPrefix), t...)
	}
	if len(disabled) == 0 {
		return data, "", true
	}
	stays := "they stay"
	if len(disabled) == 1 {
		stays = "it stays"
	}
	return bytes.Join(lines, nil), fmt.Sprintf("toolhost disabled %s the command wrote there (%s): %s as a comment, which git skips; run it yourself only if you trust it", statePlural(len(disabled), "exec line"), stateQuote(disabled), stays), true
}

// checkStrategy keeps a strategy file (rebase-merge/strategy) that names
// one of git's own strategies, written back as git reads it, and
// refuses any other.
func checkStrategy(data []byte) ([]byte, string, bool) {
	name := string(bytes.TrimSpace(data))
	if slices.Contains(builtinStrategies, name) {
		return []byte(name + "\n"), "", true
	}
	return nil, fmt.Sprintf("the merge strategy %s the command wrote was not applied: git --continue would run the program git-merge-%s; only git's own strategies (%s) are kept", stateQuote([]string{name}), stateClip(name), strings.Join(builtinStrategies, ", ")), false
}

// optsStrategy finds a strategy key on a line of a config file
// (sequencer/opts, options.strategy): at the start of the line, after
// whitespace or after a section header, followed by =, whitespace, a
// comment or the end of the line. strategy-option is not one.
var optsStrategy = regexp.MustCompile(`(?i)(^|[\s\]])strategy(\s|=|;|#|$)`)

// optsStrategyKept is the only form of such a line that is kept: one of
// git's own strategies, as git writes it.
var optsStrategyKept = regexp.MustCompile(`^\s*strategy\s*=\s*(ort|recursive|resolve|octopus|ours|subtree)\s*$`)

// disableOptsStrategy turns into a comment each line of sequencer/opts
// (git's config format) that may set options.strategy to anything but
// one of git's own strategies. The line is commented whole, whatever
// else it holds: the file is git's, written in one plain form, and a
// line in any other form is not kept.
func disableOptsStrategy(data []byte) ([]byte, string, bool) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var disabled []string
	for i, l := range lines {
		text := strings.TrimRight(string(l), "\r\n")
		if !optsStrategy.MatchString(text) || optsStrategyKept.MatchString(text) {
			continue
		}
		disabled = append(disabled, strings.TrimSpace(text))
		lines[i] = append([]byte("# disabled by toolhost, a sandboxed command wrote it: "), bytes.TrimLeft(l, " \t")...)
	}
	if len(disabled) == 0 {
		return data, "", true
	}
	return bytes.Join(lines, nil), fmt.Sprintf("toolhost disabled the merge strategy the command wrote there (%s): git --continue would run a program git-merge-<name>; only git's own strategies are kept", stateQuote(disabled)), true
}

// stateQuote quotes the first three of items, each clipped, for a
// sentence of the output.
func stateQuote(items []string) string {
	var q []string
	for i, s := range items {
		if i == 3 {
			q = append(q, fmt.Sprintf("and %d more", len(items)-3))
			break
		}
		q = append(q, fmt.Sprintf("%q", stateClip(s)))
	}
	return strings.Join(q, ", ")
}

// stateClip shortens s to 200 bytes for a sentence of the output.
func stateClip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func statePlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

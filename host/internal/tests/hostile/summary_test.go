package hostile_test

// Attacks on the approval summary, the one line a person reads before a
// risky call runs (FR-APR-06): a prompt-injected model words its call so
// the person approves something other than what runs. The summary renders
// line breaks, control and format characters visibly (engine.Visible),
// cuts a long summary in the middle, and never redacts a path argument.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
)

// allowCommands lets run_command be asked about (it is denied by default).
func allowCommands(c *config.Config, _ *host.Options) { c.Tools.Approval.Denylist = nil }

// runUnconfined lets run_command run without its sandbox, for the attacks
// on what the host does with a command's output and processes rather than
// on the sandbox, whose own suite is host/internal/tests/confine: without a
// launcher (this is not the toolhost binary) a confined command fails
// closed. Sandbox "off" takes network "on" with it, as the configuration
// requires.
func runUnconfined(c *config.Config, o *host.Options) {
	allowCommands(c, o)
	c.Tools.RunCommand.Sandbox = config.SandboxOff
	c.Tools.RunCommand.Network = config.NetworkOn
}

// Attack (model): a command whose second line is hidden from the person
// approving it: "ls # list the files\nrm -rf data". The shell runs rm;
// a summary joining the lines would show rm as part of the comment.
// Expected: the approval summary shows the line break (as ⏎), so what
// runs is what the person reads.
func TestSummary_SummaryHidesCommandLineBreak(t *testing.T) {
	h, _ := openHost(t, allowCommands)
	c := confirmation(t, h, call("1", "run_command", jsonArgs(t, map[string]any{"command": "ls # list the files\nrm -rf data"})))
	if strings.Contains(c.Summary, "list the files rm -rf data") {
		t.Errorf("summary %q shows rm -rf inside a comment; the shell runs it as a command of its own", c.Summary)
	}
}

// Attack (model): a command padded past the summary's 200 characters, so
// the part that matters would be cut: "echo <250 harmless chars>; rm -rf
// data".
// Expected: a summary that must be shortened keeps the command's end
// (head … tail).
func TestSummary_SummaryTruncationHidesCommandTail(t *testing.T) {
	h, _ := openHost(t, allowCommands)
	cmd := "echo " + strings.Repeat("all-good-", 28) + " ; rm -rf data"
	c := confirmation(t, h, call("1", "run_command", jsonArgs(t, map[string]any{"command": cmd})))
	if !strings.Contains(c.Summary, "rm -rf data") {
		t.Errorf("summary %q does not show the end of the command that will run (…; rm -rf data)", c.Summary)
	}
}

// Attack (model): a path holding Unicode format characters, so the
// summary a person approves reads as another file: "report\u202Etxt.sh"
// (right-to-left override) displays as "reporths.txt", and "notes\u200B.txt"
// (zero-width space) as "notes.txt".
// Expected: the approval summary shows no invisible format characters
// (general category Cf: bidi overrides and isolates, zero-width
// characters, ...); they appear escaped, as <U+202E>.
func TestSummary_SummaryKeepsInvisibleFormatCharacters(t *testing.T) {
	h, root := openHost(t, nil)
	for _, name := range []string{"report\u202Etxt.sh", "notes\u200B.txt"} {
		os.WriteFile(filepath.Join(root, name), []byte("x\n"), 0o644) // an overwrite is asked about
		read(t, h, name)
		c := confirmation(t, h, call("1", "write_file", jsonArgs(t, map[string]any{"path": name, "content": "y\n"})))
		for _, r := range c.Summary {
			if unicode.Is(unicode.Cf, r) {
				t.Errorf("summary %+q holds the invisible format character %U: a person reads another path", c.Summary, r)
				break
			}
		}
	}
}

// Attack (model): a path shaped like a secret assignment, so the
// redaction meant for secrets would hide which file is overwritten:
// "password=x/../" is refused, but "password=ok/deploy.sh" is a plain
// path, which key=value redaction would show as "password=[REDACTED]".
// Expected: the approval summary names the file that will be written;
// redaction never hides a path argument (paths are not secrets the model
// holds: they are what the person must judge).
func TestSummary_RedactionHidesPathFromApprover(t *testing.T) {
	h, root := openHost(t, nil)
	os.MkdirAll(filepath.Join(root, "password=ok"), 0o755)
	os.WriteFile(filepath.Join(root, "password=ok", "deploy.sh"), []byte("echo hi\n"), 0o755)
	read(t, h, "password=ok/deploy.sh")
	c := confirmation(t, h, call("1", "write_file", jsonArgs(t, map[string]any{"path": "password=ok/deploy.sh", "content": "rm -rf /\n"})))
	if !strings.Contains(c.Summary, "deploy.sh") {
		t.Errorf("summary %q does not say which file is overwritten (password=ok/deploy.sh)", c.Summary)
	}
}

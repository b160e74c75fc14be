// Command toolhost executes LLM tool calls as sandboxed WebAssembly plugins.
//
// This package holds flags, wiring and exit codes only; everything else
// lives under host/.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/output"
)

// Exit codes.
const (
	exitOK        = 0
	exitToolError = 1
	exitUsage     = 2
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func main() {
	// The confined launcher of run_command is this binary re-executed; it
	// must run before anything else of the CLI.
	if code, ok := host.RunLauncher(os.Args); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) int {
	cmd := newRootCommand()
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != errSilent {
			printError(ee.err)
		}
		return ee.code
	}
	printError(err)
	return exitUsage
}

// printError writes err for the person at the terminal. Its text may hold
// names a model chose, so control sequences go (output.Sanitize); it is a
// message, not an approval prompt, so its lines stay lines, without the
// markers a prompt shows them with.
func printError(err error) {
	fmt.Fprintln(os.Stderr, "toolhost:", output.Sanitize(err.Error()))
}

// errSilent marks an exit whose reason was already printed.
var errSilent = errors.New("silent")

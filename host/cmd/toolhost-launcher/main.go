// Command toolhost-launcher is run_command's launcher on its own: the
// launcher server and the launchers it starts ahead of need, without the
// rest of toolhost. toolhost uses it when it is installed beside the
// toolhost binary and was built from the same sources; its start-up
// costs a fraction of toolhost's (a 5 MB binary whose package
// initializers take 0.4 ms, where toolhost's take 5 ms), which every
// confined command would otherwise pay in CPU. Without it toolhost
// re-executes itself, slower, to the same effect.
//
// It is started by toolhost, never by hand.
package main

import (
	"fmt"
	"os"

	"github.com/toolhost/toolhost/host/internal/confine/launcher"
)

func main() {
	if code, ok := launcher.Run(os.Args); ok {
		os.Exit(code)
	}
	fmt.Fprintln(os.Stderr, "toolhost-launcher: started by toolhost itself, not by hand")
	os.Exit(2)
}

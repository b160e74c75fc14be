//go:build !unix

package sandbox

import "os"

const readFlags = os.O_RDONLY

func isNotDir(error) bool { return false }

//go:build !unix

package sandbox

func isNotDir(error) bool { return false }

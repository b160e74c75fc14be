// Command spin is a guest for loopguard's tests: add does ordinary work,
// spin never returns.
package main

//go:wasmexport add
func add(a, b uint32) uint32 {
	sum := a
	for range b {
		sum++
	}
	return sum
}

var sink uint32

//go:wasmexport spin
func spin() {
	for {
		sink++
	}
}

func main() {}

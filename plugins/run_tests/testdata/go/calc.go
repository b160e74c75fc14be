// Package calc is a fixture of the run_tests tool: tests that pass,
// fail and skip.
package calc

// Add returns a+b.
func Add(a, b int) int { return a + b }

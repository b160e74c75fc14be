//go:build !race

package runtime

// leakRounds is 200 without the race detector (a round takes about
// 0.4 s; see leak_race_test.go).
const leakRounds = 200

//go:build race

package runtime

// leakRounds is smaller under the race detector, which makes a round
// (five compiles from the cache, five start-ups) about five times slower
// (2–3 s): make test stays fast, and 200 rounds run without -race.
const leakRounds = 12

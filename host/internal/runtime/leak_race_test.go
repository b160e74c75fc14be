//go:build race

package runtime

// leakRounds is smaller under the race detector, which makes a round
// (a compile from the cache and a start-up per plugin) about five times
// slower (4–5 s with nineteen plugins): make test stays fast, and 200
// rounds run without -race. Sixteen leave the first half four rounds to
// settle before it is measured: with nineteen plugins, under load, RSS
// still climbed to its plateau in the third.
const leakRounds = 16

//go:build race

package trending

// raceEnabled is set under -race, where the quality test's 10,000-link
// runs would take minutes of CI: make test runs the 1,000-link runs (and
// every assertion), and the whole table comes from a run without -race.
const raceEnabled = true

//go:build race

package analytics_test

// raceEnabled is set under -race, whose instrumentation allocates: the
// allocation test runs without it (make unit, go test).
const raceEnabled = true

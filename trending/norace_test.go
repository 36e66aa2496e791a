//go:build !race

package trending

const raceEnabled = false

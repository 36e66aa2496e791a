// Package e2e holds the end-to-end tests: each starts the whole topology
// of docs/design.md (package topology: MariaDB, Redis with Sentinel, two
// shortener binaries, nginx) on free ports, as `stack up` runs it, and
// drives it from outside as a client, a browser, an attacker or a chaos
// run would. Tests of one package or one app against real servers live
// with their package; these are the tests that need every tier at once.
//
// It has no code of its own to import: everything here is a test.
package e2e

package main

import (
	"os"
	"testing"

	"shortener/internal/stack/stacktest"
	"shortener/internal/topology"
)

// TestMain removes the app binary that TestUpStatusDown and TestBrowser
// build (stacktest.AppBinary).
func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// The names TestBrowser knows the whole stack's pieces by, until it joins
// the other whole-stack tests in e2e/ (its walk through My links is
// being written here now).
var (
	shortenerBinary = stacktest.AppBinary
	stackConfig     = topology.Config
	startStack      = topology.Start
)

const apiKeyFile = topology.APIKeyFile

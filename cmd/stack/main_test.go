package main

import (
	"os"
	"testing"

	"shortener/internal/stack/stacktest"
)

// TestMain removes the app binary that TestUpStatusDown builds
// (stacktest.AppBinary).
func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

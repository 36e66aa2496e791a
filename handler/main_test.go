package handler

import (
	"os"
	"testing"

	"shortener/internal/stack/stacktest"
)

// The tests against MariaDB (realStore) share one stack, each with a
// database of its own.
func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

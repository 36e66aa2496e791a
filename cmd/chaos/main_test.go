package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"shortener/internal/chaos"
)

func noEnv(string) string { return "" }

func TestParseDefaultsRunTheWholeMatrix(t *testing.T) {
	o, err := parse(nil, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.scenarios) != len(chaos.Scenarios()) || o.scenarios[0].Name != "baseline" {
		t.Errorf("default scenarios: got %d starting with %q, want the %d of the matrix starting with baseline", len(o.scenarios), o.scenarios[0].Name, len(chaos.Scenarios()))
	}
	if !strings.HasSuffix(o.dir, ".stack") || o.out != "" {
		t.Errorf("dir %q, out %q: want .stack and none yet (run picks docs/chaos or docs/chaos/galera by the stack)", o.dir, o.out)
	}
	// The matrix must fit in 20 minutes, a sitting: every scenario of its
	// phases plus about 10 s each of setup, drain, heal and ledger (the
	// 18 rows of run 20261206T082655 took 16m16s, 54 s a row for 50 s of
	// phases; 20 s a row was assumed before that). (It was 15 for 11
	// rows; the resource and gray faults made 16, and shorter phases
	// would no longer compare with the earlier runs.)
	// A stack runs the rows that fit it (chaos.MatrixFor): the single
	// MariaDB's matrix is every row but the Galera ones.
	c := o.cfg
	rows := 0
	for _, sc := range o.scenarios {
		if sc.Needs != chaos.NeedsGalera {
			rows++
		}
	}
	if per := c.Warmup + c.Steady + c.Fault + c.Recovery + 10*time.Second; time.Duration(rows)*per > 20*time.Minute {
		t.Errorf("default phases take %v a scenario, %v for the matrix: over 20 minutes", per, time.Duration(rows)*per)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parse([]string{"-scenario", "kill-master, mysql-down", "-rate", "300", "-fault", "40s", "-dir", "/x"},
		func(k string) string { return map[string]string{"SHORTENER_STACK_DIR": "/env"}[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.scenarios) != 2 || o.scenarios[0].Name != "kill-master" || o.scenarios[1].Name != "mysql-down" {
		t.Errorf("scenarios %v, want kill-master and mysql-down", o.scenarios)
	}
	if o.cfg.Rate != 300 || o.cfg.Fault != 40*time.Second || o.dir != "/x" {
		t.Errorf("rate %v fault %v dir %q, want 300, 40s, /x", o.cfg.Rate, o.cfg.Fault, o.dir)
	}
	o, err = parse(nil, func(k string) string { return map[string]string{"SHORTENER_STACK_DIR": "/env"}[k] }, io.Discard)
	if err != nil || o.dir != "/env" {
		t.Errorf("dir from the environment: %q %v, want /env", o.dir, err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, args := range [][]string{{"-scenario", "kill-everything"}, {"extra"}, {"-rate", "fast"}} {
		if _, err := parse(args, noEnv, io.Discard); err == nil {
			t.Errorf("parse(%q) accepted it", args)
		}
	}
}

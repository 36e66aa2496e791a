package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"shortener/idgen"
	"shortener/internal/chaos"
	"shortener/internal/chaos/chaostest"
	"shortener/internal/stack"
	"shortener/internal/topology"
)

// TestChaosCheck is the short chaos check that make test runs: three
// scenarios of the chaos matrix (cmd/chaos) — the Redis master's SIGKILL,
// an app's SIGKILL and a rolling restart of both apps — each about 20 s at
// 200 requests/s through nginx, against the whole stack as "stack up"
// runs it. A scenario fails the test when its row does not hold: a
// redirect failed or went unanswered, an acknowledged create was lost,
// duplicated or does not resolve, a code is not the app's. The full
// matrix, with its reports and timing checks, is `make chaos`.
func TestChaosCheck(t *testing.T) {
	s := startFullStack(t)
	chaostest.Run(t, s, chaos.StackTarget(s), chaostest.Config(), []chaos.Account{codes{s}},
		"kill-master", "kill-app", "term-app")
}

// codes is a ledger account of the codes the load created: all distinct,
// and each carrying the node ID of the app that says it served the create
// (X-Served-By), so two apps never issue the same code.
type codes struct{ s *stack.Stack }

func (c codes) Open(context.Context, *chaos.Env) (chaos.Settle, error) {
	// The apps run with the stack's code key, made once in its directory.
	key, err := os.ReadFile(filepath.Join(c.s.Dir(), topology.CodeKeyFile))
	if err != nil {
		return nil, err
	}
	codec, err := idgen.NewCodec(strings.TrimSpace(string(key)))
	if err != nil {
		return nil, err
	}
	nodeOf := map[string]int64{}
	for _, p := range c.s.Apps() {
		nodeOf[p.Name] = int64(p.NodeID)
	}
	return func(_ context.Context, run *chaos.Run) (chaos.Entry, error) {
		e := chaos.Entry{Account: "codes"}
		seen := map[string]bool{}
		byNode := map[int64]int{}
		for _, r := range run.Results {
			if r.Kind != chaos.Create || r.Outcome != chaos.OK {
				continue
			}
			problem := func(why string) {
				e.Problems = append(e.Problems, chaos.Problem{Kind: "code", Code: r.Code, URL: r.URL, Why: why})
			}
			if seen[r.Code] && !r.Replayed {
				problem("issued twice")
			}
			seen[r.Code] = true
			id, err := codec.ID(r.Code)
			if err != nil {
				problem(fmt.Sprintf("does not decode: %v", err))
				continue
			}
			node := idgen.Node(id)
			byNode[node]++
			// A replayed answer comes from whichever app took the retry;
			// the code is the first app's.
			if want, ok := nodeOf[r.ServedBy]; !r.Replayed && (!ok || node != want) {
				problem(fmt.Sprintf("served by %q, node ID %d, want %d", r.ServedBy, node, want))
			}
		}
		e.Figures = []chaos.Figure{{Label: "codes created, by node ID", Value: fmt.Sprint(byNode)}}
		ok := len(e.Problems) == 0 && len(byNode) == len(nodeOf)
		e.Checks = []chaos.Check{{ID: "codes", What: "codes distinct, each with the node ID of the app that served it, from every app",
			Want: fmt.Sprintf("0 problems, %d node IDs", len(nodeOf)), Got: fmt.Sprintf("%d problems, node IDs %v", len(e.Problems), byNode),
			OK: ok, Required: true}}
		return e, nil
	}, nil
}

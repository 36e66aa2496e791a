// Package chaos is the one engine for every fault-under-load run of the
// shortener: `make chaos` (cmd/chaos), the short check in `make test`
// (e2e) and the integration tests that break Redis under an app
// (cmd/shortener, through chaostest) all run a Scenario with a
// Runner. A run is open-model load on a Target (nginx, or one app), a
// fault injected on the local stack while the load runs, and a Report a
// user can trust: every request counted (including those that never got
// an answer), latency timed from when each request was due, a ledger that
// checks what the load did against MySQL, and checks, each with a want
// and a got, that say whether the scenario's row of docs/design.md's failure
// table holds.
//
// It talks to the stack only as a user and an operator would: HTTP to
// 127.0.0.1 (the target for the load, each app's /metrics for its
// breakers, tiers and dropped clicks, parsed with expfmt), the stack
// package's controls for the faults (signals, iptables, a Redis node's
// settings, an app's clicks directory on a tmpfs that fills up or put
// back from an older copy), and a read-only MySQL user for the ledger.
//
// The faults: the Redis master killed, frozen or black-holed, every Redis
// node slow (a gray failure), the master refusing writes, all Redis nodes
// down, the sentinels' quorum lost, the master and an app killed
// together, an app killed, frozen or restarted, an app's state file
// corrupt, its journal volume full or its journal restored to an older
// copy, MySQL down: Scenarios() lists them in the order a full run takes.
//
// The files: load.go, client.go and stats.go send and count the load;
// scenario.go and scenarios.go are the faults (the matrix), health.go the
// heal; metrics.go reads /metrics; checks.go the checks and measures,
// resources.go those of the resource and gray faults; ledger.go,
// clicks.go, deletes.go and trending.go the ledger's accounts; run.go the
// Runner; report.go, markdown.go, chart.go and write.go the reports.
//
// # The pacer
//
// The load's pacer is written here rather than taken from vegeta, its
// model, because vegeta times each request from the moment a worker sends
// it: when the server stalls, requests queue for a worker, the queueing is
// not in their latency, and the stall shows up as fewer requests — the
// coordinated-omission error a chaos run exists to avoid. Here every
// latency runs from the request's intended send time, requests beyond the
// in-flight bound count as unknown rather than vanish, and a create
// carries its own Idempotency-Key (every other one has one) through its
// retries, which vegeta's targeters do not model.
//
// # Adding a ledger column
//
// A feature that must not lose what the load does (clicks, trending)
// adds an Account (ledger.go, whose types say when each part runs) and
// lists it in Accounts() to keep it in every run, or adds it to one Runner
// with AddAccount (a test does). Open notes what its Settle will compare
// against (a count read through env.DB, the read-only user) and may start
// traffic of its own: time each call and use Summarise, the package's one
// percentile definition. Settle reads the Run (a redirect's Result.Link
// indexes env.Links) and returns an Entry; give a Figure a Column ("lost
// clicks") and it is also a column of docs/chaos' summary table.
//
// # Adding a check
//
// A check is a Check with an ID, a want, a got and OK. An account returns
// checks that apply to every scenario; a scenario lists its own in
// Scenario.Checks as Measures, which may also fill report figures. There
// is no switch on scenario names: a scenario whose docs/design.md row expects a
// common or ledger check to fail (creates while MySQL is down) waives its
// ID in Scenario.Waive, and one whose row promises a check that is only
// reported elsewhere (trending's quality) requires it in
// Scenario.Require. A row that states a promise of its own in place of a
// ledger check waives that check and measures its own: disk-full waives
// "clicks" and ClicksExplainedByDrops checks served = stored + counted
// drops from the clicks account's tally (Run.Clicks). A check of wall-clock time sets Timing (see
// Check.Timing for why tests only report it); compare with the run's own
// baseline (the steady phase) or the Redis deadline rather than a
// constant where you can.
package chaos

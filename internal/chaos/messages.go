package chaos

import (
	"context"
	"fmt"
)

// Marks of messages-lost.
const (
	markDeaf     = "deaf"      // the master's packets to its subscribers began to be dropped
	markDeafHeld = "deaf_held" // at the heal, every subscription was still open with bytes undelivered
)

// deafenSubscribers is messages-lost's fault: the Redis master's pub/sub
// clients (every app's invalidation subscription) stop hearing it, with
// no error on either side. What a lost message used to cost was bounded
// by the L1's 5-second TTL; now L1 entries live minutes while an app
// reads the invalidation outbox in time (docs/lookup.md), and that read
// is what must catch every delete and edit here.
func deafenSubscribers(ctx context.Context, s *Scene) error {
	m, err := s.takeMaster(ctx)
	if err != nil {
		return err
	}
	ports, err := m.PubSubClients(ctx)
	if err != nil {
		return err
	}
	if apps := len(s.Stack.Apps()); len(ports) < apps {
		return fmt.Errorf("%d pub/sub clients on %s, fewer than the %d apps: the row would test nothing", len(ports), m.Name, apps)
	}
	s.Note(markDeaf, "deafen the %d pub/sub clients of %s (ports %v): every packet %s sends them is dropped", len(ports), m.Name, ports, m.Name)
	return m.Deafen(ctx, ports)
}

// healSubscribers first checks that the fault held (each deafened
// connection still open, with bytes the master sent and the client never
// acknowledged: messages, or the replies to its health-check pings), then
// removes the rules; TCP then delivers what was held back.
func healSubscribers(ctx context.Context, s *Scene) error {
	if s.master == nil {
		return errNotInjected
	}
	deafened := s.master.Deafened()
	held := 0
	for _, port := range deafened {
		n, ok, err := s.master.Unsent(port)
		if err != nil {
			return err
		}
		if ok && n > 0 {
			held++
		}
		s.Note("", "subscriber port %d: connection open %v, %d bytes undelivered", port, ok, n)
	}
	if len(deafened) > 0 && held == len(deafened) {
		s.Note(markDeafHeld, "all %d subscriptions were open and deaf to the end", held)
	}
	if err := s.master.Heal(ctx); err != nil {
		return err
	}
	s.Note("", "healed %s: its subscribers hear it again", s.master.Name)
	return nil
}

// MessagesLost checks that messages-lost's fault took: the subscriptions
// stayed open and deaf through the fault (so no resubscription dropped
// the L1s), which is what makes the deletes and edits accounts a test of
// the outbox read.
func MessagesLost(r *Run) []Check {
	_, deaf := r.Marks[markDeaf]
	_, held := r.Marks[markDeafHeld]
	return []Check{{ID: "messages-lost", What: "every app's invalidation subscription open and deaf from the fault to the heal",
		Want: "deafened, and every connection still open with bytes undelivered at the heal",
		Got:  fmt.Sprintf("deafened: %v; all open and undelivered at the heal: %v", deaf, held), OK: deaf && held, Required: true}}
}

// Package idgen issues short codes for new links.
//
// Each app instance owns one Snowflake node (github.com/bwmarrin/snowflake)
// with a node ID of its own. A Snowflake ID packs milliseconds since the
// epoch, the node ID and a per-millisecond sequence into 63 bits, so two
// instances with different node IDs can never issue the same ID, and one
// instance never issues the same ID twice while it runs. The ID is then
// passed through a keyed permutation (see Codec) and written in base62,
// which keeps the code short, unrevealing and safe in a URL path.
//
// Uniqueness rests on the node IDs being distinct: two live instances with
// the same node ID will collide within a millisecond under load (see
// TestSameNodeCollides). The unique key on links.code stays the final guard.
package idgen

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/snowflake"
)

// MaxNode is the largest node ID a Snowflake node accepts (10 bits).
const MaxNode = 1023

// ErrNodeRange is returned by New for a node ID outside 0..MaxNode.
var ErrNodeRange = errors.New("idgen: node ID out of range 0-1023")

// Generator issues codes for one instance. It is safe for concurrent use.
type Generator struct {
	node  *snowflake.Node
	id    int64
	codec Codec
	last  atomic.Int64 // the last ID issued
}

// New returns a Generator for the given node ID whose codes are written
// by codec.
func New(nodeID int64, codec Codec) (*Generator, error) {
	if nodeID < 0 || nodeID > MaxNode {
		return nil, fmt.Errorf("%w: got %d", ErrNodeRange, nodeID)
	}
	if codec.key == nil {
		return nil, errors.New("idgen: a codec is required")
	}
	n, err := snowflake.NewNode(nodeID)
	if err != nil {
		return nil, fmt.Errorf("new snowflake node %d: %w", nodeID, err)
	}
	return &Generator{node: n, id: nodeID, codec: codec}, nil
}

// NodeID reports the node ID this generator stamps into every ID.
func (g *Generator) NodeID() int64 { return g.id }

// Next returns a new ID and its code.
func (g *Generator) Next() (id int64, code string) {
	id = g.node.Generate().Int64()
	g.last.Store(id)
	return id, g.codec.Code(id)
}

// Node extracts the node ID stamped into a Snowflake ID.
func Node(id int64) int64 { return snowflake.ParseInt64(id).Node() }

// Time returns when an ID was issued, to the millisecond.
func Time(id int64) time.Time { return time.UnixMilli(snowflake.ParseInt64(id).Time()) }

// Horizon returns a time no ID issued so far is later than: the later of
// now and the last ID's time. Snowflake keeps its own monotonic clock, so
// after a wall-clock step back the last ID may be ahead of now.
func (g *Generator) Horizon(now time.Time) time.Time {
	if id := g.last.Load(); id != 0 {
		if t := Time(id); t.After(now) {
			return t
		}
	}
	return now
}

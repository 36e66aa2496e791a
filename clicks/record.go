package clicks

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"time"

	"shortener"
)

// A segment file starts with a header naming the journal and the node
// that wrote it, then holds records back to back:
//
//	magic 0xC7 | payload length (uint16, big endian) | CRC-32C of the payload (uint32) | payload
//
// and a payload is
//
//	version 1 | link ID (varint) | time, Unix ms (varint) | agent (1 byte) |
//	code length (1 byte) | code | referrer length (1 byte) | referrer host
//
// or, for a click whose proxied request is known (Click.Request), version
// 2: the same fields, then the request's ID (16 bytes) and its time (Unix
// ms, varint). A click without one is still written as version 1, so
// journals written before version 2 existed read the same.
//
// A click with analytics dimensions (Click.Analyzed) is version 3: the
// version-1 fields, a flags byte (flagRequest: the request follows, as in
// version 2), the request if flagged, then the dimensions: country (2
// ASCII bytes, zeros when unknown), browser, OS and device (1 byte each,
// package analytics' numbering) and the visitor hash (8 bytes, big
// endian). Version 3 is written only for analyzed clicks, so a journal
// without analytics reads as it always did.
//
// The magic byte and the checksum let a reader tell a torn or corrupt
// record from a good one and find the next good one after it.
const (
	recordMagic   = 0xC7
	recordHeader  = 1 + 2 + 4
	recordVersion = 1
	// recordVersionRequest is a record that names its request.
	recordVersionRequest = 2
	// recordVersionDims is a record with analytics dimensions (and flags).
	recordVersionDims = 3
	flagRequest       = 1 << 0
	// dimsSize is the dimensions' bytes: country 2, browser, OS, device,
	// visitor 8.
	dimsSize = 2 + 3 + 8
	// maxPayload bounds a payload: code and referrer are clipped to 255
	// bytes each, so anything longer is corruption.
	maxPayload = 2*maxField + 32 + 16 + binary.MaxVarintLen64 + 1 + dimsSize
	maxField   = 255
)

// Segment header: magic "SCJ1", journal ID, node ID, creation time (Unix
// ms), each 8 bytes big endian.
const (
	segmentMagic = "SCJ1"
	headerSize   = 4 + 8 + 8 + 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errBadPayload means a record's checksum held but its payload does not
// decode: a writer bug or a collision, skipped like corruption.
var errBadPayload = errors.New("clicks: undecodable record payload")

// appendRecord appends c, encoded as one record, to buf.
func appendRecord(buf []byte, c shortener.Click) []byte {
	code, ref := clip(c.Code), clip(c.Referrer)
	start := len(buf)
	buf = append(buf, recordMagic, 0, 0, 0, 0, 0, 0)
	switch {
	case c.Analyzed:
		buf = append(buf, recordVersionDims)
	case c.Request.Known():
		buf = append(buf, recordVersionRequest)
	default:
		buf = append(buf, recordVersion)
	}
	buf = binary.AppendVarint(buf, c.LinkID)
	buf = binary.AppendVarint(buf, c.At.UnixMilli())
	buf = append(buf, byte(c.Agent), byte(len(code)))
	buf = append(buf, code...)
	buf = append(buf, byte(len(ref)))
	buf = append(buf, ref...)
	if c.Analyzed {
		var flags byte
		if c.Request.Known() {
			flags |= flagRequest
		}
		buf = append(buf, flags)
	}
	if c.Request.Known() {
		buf = append(buf, c.Request.ID[:]...)
		buf = binary.AppendVarint(buf, c.Request.At)
	}
	if c.Analyzed {
		d := c.Dims
		buf = append(buf, d.Country[0], d.Country[1], d.Browser, d.OS, d.Device)
		buf = binary.BigEndian.AppendUint64(buf, d.Visitor)
	}
	payload := buf[start+recordHeader:]
	binary.BigEndian.PutUint16(buf[start+1:], uint16(len(payload)))
	binary.BigEndian.PutUint32(buf[start+3:], crc32.Checksum(payload, castagnoli))
	return buf
}

func clip(s string) string {
	if len(s) > maxField {
		return s[:maxField]
	}
	return s
}

// interner hands out one string per distinct byte sequence: a batch holds
// thousands of clicks on far fewer codes and referrer hosts, and decoding
// them was half of the shipper's CPU when each was a new string.
type interner map[string]string

func (in interner) of(b []byte) string {
	if s, ok := in[string(b)]; ok { // no allocation to look up
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// decodePayload decodes a record's payload.
func decodePayload(p []byte, in interner) (shortener.Click, error) {
	if len(p) < 1 || p[0] < recordVersion || p[0] > recordVersionDims {
		return shortener.Click{}, errBadPayload
	}
	version := p[0]
	p = p[1:]
	id, n := binary.Varint(p)
	if n <= 0 {
		return shortener.Click{}, errBadPayload
	}
	p = p[n:]
	ms, n := binary.Varint(p)
	if n <= 0 {
		return shortener.Click{}, errBadPayload
	}
	p = p[n:]
	if len(p) < 2 {
		return shortener.Click{}, errBadPayload
	}
	agent, codeLen := p[0], int(p[1])
	p = p[2:]
	if agent > byte(shortener.AgentBot) || len(p) < codeLen+1 {
		return shortener.Click{}, errBadPayload
	}
	code := in.of(p[:codeLen])
	p = p[codeLen:]
	refLen := int(p[0])
	p = p[1:]
	if len(p) < refLen {
		return shortener.Click{}, errBadPayload
	}
	c := shortener.Click{
		LinkID:   id,
		Code:     code,
		At:       time.UnixMilli(ms).UTC(),
		Referrer: in.of(p[:refLen]),
		Agent:    shortener.Agent(agent),
	}
	p = p[refLen:]
	hasRequest := version == recordVersionRequest
	if version == recordVersionDims {
		if len(p) < 1 || p[0]&^flagRequest != 0 {
			return shortener.Click{}, errBadPayload
		}
		hasRequest = p[0]&flagRequest != 0
		p = p[1:]
	}
	if hasRequest {
		if len(p) < len(c.Request.ID)+1 {
			return shortener.Click{}, errBadPayload
		}
		copy(c.Request.ID[:], p)
		p = p[len(c.Request.ID):]
		at, n := binary.Varint(p)
		if n <= 0 || !c.Request.Known() {
			return shortener.Click{}, errBadPayload
		}
		c.Request.At = at
		p = p[n:]
	}
	if version == recordVersionDims {
		if len(p) < dimsSize {
			return shortener.Click{}, errBadPayload
		}
		c.Analyzed = true
		c.Dims = shortener.ClickDims{
			Country: [2]byte{p[0], p[1]},
			Browser: p[2], OS: p[3], Device: p[4],
			Visitor: binary.BigEndian.Uint64(p[5:]),
		}
		p = p[dimsSize:]
	}
	if len(p) != 0 {
		return shortener.Click{}, errBadPayload
	}
	return c, nil
}

// header is what a segment's header says.
type header struct {
	journal, node int64
	created       time.Time
}

func appendHeader(buf []byte, h header) []byte {
	buf = append(buf, segmentMagic...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(h.journal))
	buf = binary.BigEndian.AppendUint64(buf, uint64(h.node))
	return binary.BigEndian.AppendUint64(buf, uint64(h.created.UnixMilli()))
}

func parseHeader(b []byte) (header, bool) {
	if len(b) < headerSize || string(b[:4]) != segmentMagic {
		return header{}, false
	}
	return header{
		journal: int64(binary.BigEndian.Uint64(b[4:])),
		node:    int64(binary.BigEndian.Uint64(b[12:])),
		created: time.UnixMilli(int64(binary.BigEndian.Uint64(b[20:]))).UTC(),
	}, true
}

// scan is what parsing a stretch of a segment found.
type scan struct {
	clicks  []shortener.Click
	next    int64 // position after the last byte consumed
	corrupt int   // stretches of bad bytes skipped
	torn    bool  // the stretch ended in an incomplete record at the limit
	padding bool  // the stretch ended in zeros (a crashed segment's unwritten tail), at next
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// parse reads records from b, which holds the segment's bytes from
// position pos; end reports whether b reaches the segment's readable limit
// (then an incomplete record at its end is a torn tail, not one to read
// later). It stops after max clicks. A record with a bad magic byte,
// length or checksum is skipped: the bytes after it are searched for the
// next good record, and the stretch is counted once as corrupt. The
// clicks are appended to dst[:0], whose array the caller may reuse from
// one scan to the next, and strings are interned in in (nil: a new one).
func parse(dst []shortener.Click, in interner, b []byte, pos int64, end bool, max int) scan {
	// Most records are 40-90 bytes: one allocation at most, where growing
	// by append was most of parse's time.
	if want := min(max, len(b)/40+1); cap(dst) < want {
		dst = make([]shortener.Click, 0, want)
	}
	s := scan{clicks: dst[:0]}
	if in == nil {
		in = interner{}
	}
	i := 0
	skipping := false
	for i < len(b) && len(s.clicks) < max {
		rest := b[i:]
		if rest[0] == 0 && !skipping && allZero(rest) {
			// A segment left by a crash keeps its preallocated tail of
			// zeros: the end of its records, not corruption. next stays
			// at its start: a position past it would claim bytes that,
			// in a copy of a segment still being written elsewhere (a
			// cloned volume), are yet to come.
			s.padding = true
			break
		}
		if rest[0] != recordMagic {
			if !skipping {
				s.corrupt++
				skipping = true
			}
			i++
			continue
		}
		if len(rest) < recordHeader {
			if !end {
				break // read the rest later
			}
			if !skipping {
				s.torn = true
			}
			i = len(b)
			break
		}
		n := int(binary.BigEndian.Uint16(rest[1:]))
		if n > maxPayload {
			if !skipping {
				s.corrupt++
				skipping = true
			}
			i++
			continue
		}
		if len(rest) < recordHeader+n {
			if !end {
				break
			}
			if skipping {
				// Inside garbage a stray magic byte may claim any
				// length; keep searching.
				i++
				continue
			}
			s.torn = true
			i = len(b)
			break
		}
		payload := rest[recordHeader : recordHeader+n]
		if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(rest[3:]) {
			if !skipping {
				s.corrupt++
				skipping = true
			}
			i++
			continue
		}
		c, err := decodePayload(payload, in)
		if err != nil {
			if !skipping {
				s.corrupt++
				skipping = true
			}
			i++
			continue
		}
		skipping = false
		s.clicks = append(s.clicks, c)
		i += recordHeader + n
	}
	s.next = pos + int64(i)
	return s
}

package handler

import (
	"bytes"
	"fmt"
	"net/http"
	"shortener"

	"github.com/labstack/echo/v4"
	qrcode "github.com/yeqown/go-qrcode/v2"
)

// qrQuiet is the blank margin around a QR code, in modules; the standard
// asks for 4 so scanners find the edges on any background.
const qrQuiet = 4

// qr answers GET /qr/{code}: the short URL of code as a QR code in SVG.
// It needs no lookup (the short URL follows from the code), so it costs no
// database or cache call, and the answer never changes: cached for a day.
func (h *Handler) qr(c echo.Context) error {
	code := c.Param("code")
	if !plausibleCode(code) {
		return shortener.ErrNotFound
	}
	svg, err := qrSVG(h.response(shortener.Link{Code: code}).ShortURL)
	if err != nil {
		return err
	}
	hd := c.Response().Header()
	hd.Set("Cache-Control", "public, max-age=86400")
	hd.Set("Content-Security-Policy", "default-src 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Disposition", `inline; filename="`+code+`.svg"`)
	return c.Blob(http.StatusOK, "image/svg+xml", svg)
}

// qrSVG draws text as a QR code (error correction level M: survives 15%
// damage, e.g. a crease in print) in SVG: one path of unit squares in a
// viewBox, so it scales to any size without blur and stays a few KB.
func qrSVG(text string) ([]byte, error) {
	q, err := qrcode.NewWith(text, qrcode.WithErrorCorrectionLevel(qrcode.ErrorCorrectionMedium))
	if err != nil {
		return nil, fmt.Errorf("encode QR code: %w", err)
	}
	var m bitmap
	if err := q.Save(&m); err != nil {
		return nil, fmt.Errorf("draw QR code: %w", err)
	}
	size := len(m.rows) + 2*qrQuiet
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, size, size)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, size, size)
	for y, row := range m.rows {
		for x := 0; x < len(row); x++ {
			if !row[x] {
				continue
			}
			// A run of dark modules is one rectangle: a third of the size
			// of one square per module.
			n := 1
			for x+n < len(row) && row[x+n] {
				n++
			}
			fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", x+qrQuiet, y+qrQuiet, n, n)
			x += n - 1
		}
	}
	b.WriteString(`"/></svg>`)
	return b.Bytes(), nil
}

// bitmap is a qrcode.Writer that keeps the modules: dark is true.
type bitmap struct{ rows [][]bool }

func (m *bitmap) Write(mat qrcode.Matrix) error { m.rows = mat.Bitmap(); return nil }
func (m *bitmap) Close() error                  { return nil }

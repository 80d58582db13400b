//go:build ignore

// gen draws Delta's icons: `go generate ./assets` rewrites the PNGs in this
// folder. Shapes are computed, not drawn by hand, so the four states stay
// aligned: a delta (Δ) outline when all is well, the outline broken at its
// base when a peer is unreachable, the outline with a dot at its heart
// while Delta asks owners about writes, and a filled delta with a gap for
// an exclamation mark when a write or a received call needs a person.
// Edges are antialiased by 8×8 supersampling.
package main

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
)

type pt struct{ x, y float64 }

// TemplatePixels is the menu-bar template's size: 16 pt at @2x.
const TemplatePixels = 32

// HicolorSizes are the app icon's sizes besides 512 (assets.HicolorSizes).
var HicolorSizes = []int{16, 22, 24, 32, 48, 64, 128, 256}

// inTri reports whether p is inside triangle a, b, c.
func inTri(p, a, b, c pt) bool {
	s := func(p1, p2, p3 pt) float64 { return (p1.x-p3.x)*(p2.y-p3.y) - (p2.x-p3.x)*(p1.y-p3.y) }
	d1, d2, d3 := s(p, a, b), s(p, b, c), s(p, c, a)
	neg := d1 < 0 || d2 < 0 || d3 < 0
	pos := d1 > 0 || d2 > 0 || d3 > 0
	return !(neg && pos)
}

// delta returns the triangle filling a unit square with margin m.
func delta(m float64) (a, b, c pt) {
	return pt{0.5, m}, pt{1 - m, 1 - m - 0.04}, pt{m, 1 - m - 0.04}
}

// inset shrinks triangle a, b, c towards its centroid by k (0..1).
func inset(a, b, c pt, k float64) (pt, pt, pt) {
	g := pt{(a.x + b.x + c.x) / 3, (a.y + b.y + c.y) / 3}
	f := func(p pt) pt { return pt{g.x + (p.x-g.x)*k, g.y + (p.y-g.y)*k} }
	return f(a), f(b), f(c)
}

// shape reports the coverage of the unit-square point p for a state
// (view.Levels): one mark, four states told apart by shape as well as
// colour, since the macOS menu bar shows them in one tint.
func shape(state string, p pt) bool {
	a, b, c := delta(0.08)
	ia, ib, ic := inset(a, b, c, 0.62)
	outline := inTri(p, a, b, c) && !inTri(p, ia, ib, ic)
	switch state {
	case "ok":
		return outline
	case "degraded":
		// The outline with its base cut in the middle: a road is missing.
		return outline && !(p.y > 0.7 && math.Abs(p.x-0.5) < 0.13)
	case "asking":
		// The outline with a dot at its heart: Delta is asking an owner;
		// nothing to do.
		return outline || math.Hypot(p.x-0.5, p.y-0.64) < 0.095
	case "needs-you":
		if !inTri(p, a, b, c) {
			return false
		}
		// An exclamation mark cut out of the filled delta.
		bar := math.Abs(p.x-0.5) < 0.055 && p.y > 0.36 && p.y < 0.66
		dot := math.Hypot(p.x-0.5, p.y-0.76) < 0.06
		return !bar && !dot
	}
	return false
}

// render draws state at size×size in col (alpha from coverage).
func render(size int, col color.NRGBA, cover func(pt) bool) *image.NRGBA {
	const ss = 8
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			n := 0
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					p := pt{(float64(x) + (float64(sx)+0.5)/ss) / float64(size), (float64(y) + (float64(sy)+0.5)/ss) / float64(size)}
					if cover(p) {
						n++
					}
				}
			}
			if n > 0 {
				c := col
				c.A = uint8(int(col.A) * n / (ss * ss))
				img.SetNRGBA(x, y, c)
			}
		}
	}
	return img
}

// appIcon: a rounded blue square with a white delta.
func appIcon(size int) *image.NRGBA {
	const ss = 4
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	a, b, c := delta(0.24)
	ia, ib, ic := inset(a, b, c, 0.55)
	rounded := func(p pt) bool {
		const m, r = 0.06, 0.2
		q := pt{math.Max(math.Abs(p.x-0.5)-(0.5-m-r), 0), math.Max(math.Abs(p.y-0.5)-(0.5-m-r), 0)}
		return math.Hypot(q.x, q.y) <= r
	}
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			var r, g, bl, al float64
			for sy := 0; sy < ss; sy++ {
				for sx := 0; sx < ss; sx++ {
					p := pt{(float64(x) + (float64(sx)+0.5)/ss) / float64(size), (float64(y) + (float64(sy)+0.5)/ss) / float64(size)}
					if !rounded(p) {
						continue
					}
					al++
					if inTri(p, a, b, c) && !inTri(p, ia, ib, ic) {
						r, g, bl = r+255, g+255, bl+255
						continue
					}
					// A vertical gradient, deep blue to bright blue.
					r += 20 + 30*(1-p.y)
					g += 90 + 80*(1-p.y)
					bl += 200 + 50*(1-p.y)
				}
			}
			if al > 0 {
				img.SetNRGBA(x, y, color.NRGBA{uint8(r / al), uint8(g / al), uint8(bl / al), uint8(255 * al / (ss * ss))})
			}
		}
	}
	return img
}

func write(name string, img image.Image) {
	f, err := os.Create(name)
	if err != nil {
		log.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
}

func main() {
	colors := map[string]color.NRGBA{
		"ok":        {0x2f, 0xa0, 0x5a, 0xff}, // green: seen on light and dark panels alike
		"degraded":  {0xd9, 0x8a, 0x00, 0xff}, // amber
		"asking":    {0x2b, 0x6c, 0xd0, 0xff}, // blue: Delta's own colour, nothing wrong
		"needs-you": {0xd7, 0x2c, 0x2c, 0xff}, // red
	}
	for state, col := range colors {
		st := state
		cover := func(p pt) bool { return shape(st, p) }
		// macOS menu-bar template: black, alpha only; the system tints it.
		// Drawn at 32 px for its 16 pt (fyne sets the image's size to 16
		// pt): pixel for pixel on a Retina menu bar, not scaled from
		// another size.
		write("tray-"+state+"-template.png", render(TemplatePixels, color.NRGBA{0, 0, 0, 0xff}, cover))
		// Linux panels show colour.
		write("tray-"+state+".png", render(64, col, cover))
	}
	write("app-icon.png", appIcon(512))
	// The macOS icns's largest, 512 pt at @2x (ic10), drawn, not scaled.
	write("app-icon-1024.png", appIcon(1024))
	// The freedesktop hicolor theme's sizes, each drawn at its size (the
	// .deb installs them; a desktop picks the nearest).
	for _, n := range HicolorSizes {
		write(fmt.Sprintf("app-icon-%d.png", n), appIcon(n))
	}
}

package packaging

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
)

// icnsSizes are the PNG-bearing icns entries made from the 1024 px app
// icon: 512, 256, 128, 32 and 16 pt, each at @1x and @2x. The types are
// Apple's PNG ones: icp4/icp5 for 16 and 32 px (ic04/ic05 are ARGB, and a
// PNG there may show blank), ic10 for 512 pt @2x (issue 37, N13).
var icnsSizes = []struct {
	kind string
	px   int
}{{"ic10", 1024}, {"ic09", 512}, {"ic08", 256}, {"ic07", 128}, {"ic14", 512}, {"ic13", 256}, {"ic12", 64}, {"ic11", 32}, {"icp5", 32}, {"icp4", 16}}

// ICNS makes an Apple icon file from a square PNG of at least 1024 px: a
// header ("icns", total length) and one entry per size (type, length, PNG
// data), each size scaled down from the source by averaging.
func ICNS(src []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("packaging: the app icon is not a PNG: %w", err)
	}
	if b := img.Bounds(); b.Dx() != b.Dy() || b.Dx() < 1024 {
		return nil, fmt.Errorf("packaging: the app icon is %d×%d; icns needs a square of at least 1024 px", b.Dx(), b.Dy())
	}
	var body bytes.Buffer
	for _, s := range icnsSizes {
		var p bytes.Buffer
		if err := png.Encode(&p, scale(img, s.px)); err != nil {
			return nil, err
		}
		body.WriteString(s.kind)
		binary.Write(&body, binary.BigEndian, uint32(8+p.Len())) // a bytes.Buffer does not fail
		body.Write(p.Bytes())
	}
	var out bytes.Buffer
	out.WriteString("icns")
	binary.Write(&out, binary.BigEndian, uint32(8+body.Len()))
	out.Write(body.Bytes())
	return out.Bytes(), nil
}

// ReadICNS lists an icns file's entries: type → its PNG's width.
func ReadICNS(b []byte) (map[string]int, error) {
	if len(b) < 8 || string(b[:4]) != "icns" || int(binary.BigEndian.Uint32(b[4:8])) != len(b) {
		return nil, fmt.Errorf("packaging: not an icns file (or its length is wrong)")
	}
	out := map[string]int{}
	for rest := b[8:]; len(rest) > 0; {
		if len(rest) < 8 {
			return nil, fmt.Errorf("packaging: icns entry header cut short")
		}
		kind, n := string(rest[:4]), int(binary.BigEndian.Uint32(rest[4:8]))
		if n < 8 || n > len(rest) {
			return nil, fmt.Errorf("packaging: icns entry %s has length %d", kind, n)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(rest[8:n]))
		if err != nil {
			return nil, fmt.Errorf("packaging: icns entry %s is not a PNG: %w", kind, err)
		}
		out[kind] = cfg.Width
		rest = rest[n:]
	}
	return out, nil
}

// scale shrinks a square image to px × px by averaging each block of
// source pixels (premultiplied colour).
func scale(src image.Image, px int) image.Image {
	b := src.Bounds()
	n := b.Dx()
	if px == n {
		return src
	}
	dst := image.NewNRGBA(image.Rect(0, 0, px, px))
	for y := range px {
		y0, y1 := b.Min.Y+y*n/px, b.Min.Y+(y+1)*n/px
		for x := range px {
			x0, x1 := b.Min.X+x*n/px, b.Min.X+(x+1)*n/px
			var r, g, bl, a, cnt uint64
			for sy := y0; sy < max(y1, y0+1); sy++ {
				for sx := x0; sx < max(x1, x0+1); sx++ {
					cr, cg, cb, ca := src.At(sx, sy).RGBA()
					r, g, bl, a, cnt = r+uint64(cr), g+uint64(cg), bl+uint64(cb), a+uint64(ca), cnt+1
				}
			}
			if a == 0 {
				continue
			}
			// Un-premultiply the average.
			dst.SetNRGBA(x, y, color.NRGBA{R: uint8(r * 255 / a), G: uint8(g * 255 / a), B: uint8(bl * 255 / a), A: uint8(a / cnt >> 8)})
		}
	}
	return dst
}

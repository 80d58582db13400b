package assets

import (
	"bytes"
	"image/png"
	"testing"

	"github.com/delta-roads/delta/gateway/wire/view"
)

// Every state has both icons; template icons are black with alpha only (so
// macOS can tint them), colour icons are not; the app icon is 512×512.
func TestIcons(t *testing.T) {
	for _, st := range view.Levels {
		tmpl, reg, err := TrayIcon(string(st))
		if err != nil {
			t.Fatal(err)
		}
		for name, b := range map[string][]byte{"template": tmpl, "regular": reg} {
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s %s: %v", st, name, err)
			}
			coloured, opaque := false, 0
			bnd := img.Bounds()
			for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
				for x := bnd.Min.X; x < bnd.Max.X; x++ {
					r, g, b, a := img.At(x, y).RGBA()
					if a > 0 && (r|g|b) != 0 {
						coloured = true
					}
					if a == 0xffff {
						opaque++
					}
				}
			}
			if name == "template" && (bnd.Dx() != 32 || bnd.Dy() != 32) {
				t.Errorf("%s template icon is %v; the menu bar shows it at 16 pt, so it is drawn at 32 px (@2x)", st, bnd.Size())
			}
			if name == "template" && coloured {
				t.Errorf("%s template icon has colour; macOS needs black with alpha", st)
			}
			if name == "regular" && !coloured {
				t.Errorf("%s colour icon is black", st)
			}
			if opaque < bnd.Dx()*bnd.Dy()/10 {
				t.Errorf("%s %s icon is almost empty (%d opaque pixels)", st, name, opaque)
			}
		}
	}
	if _, _, err := TrayIcon("bogus"); err == nil {
		t.Error("an unknown state gave an icon")
	}
	img, err := png.Decode(bytes.NewReader(AppIcon()))
	if err != nil || img.Bounds().Dx() != 512 || img.Bounds().Dy() != 512 {
		t.Fatalf("app icon: %v %v", img.Bounds(), err)
	}
}

// TestAppIconSizes: each hicolor size is drawn at that size; others are
// refused.
func TestAppIconSizes(t *testing.T) {
	for _, n := range append([]int{512, 1024}, HicolorSizes...) {
		b, err := AppIconSized(n)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil || img.Bounds().Dx() != n || img.Bounds().Dy() != n {
			t.Errorf("the %d px icon: %v %v", n, img.Bounds(), err)
		}
	}
	if _, err := AppIconSized(17); err == nil {
		t.Error("a 17 px icon was given")
	}
}

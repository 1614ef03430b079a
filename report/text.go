package report

import (
	"image"
	"image/color"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// The Go fonts (BSD licence) are compiled into the binary, so a render
// depends on no installed font and gives the same bytes everywhere.
var fonts = sync.OnceValues(func() (*opentype.Font, *opentype.Font) {
	reg, err := opentype.Parse(goregular.TTF)
	if err != nil {
		panic("report: embedded Go Regular font: " + err.Error()) // a broken build, not input
	}
	bold, err := opentype.Parse(gobold.TTF)
	if err != nil {
		panic("report: embedded Go Bold font: " + err.Error())
	}
	return reg, bold
})

// faces are the sizes a render uses. An opentype face is not safe for
// concurrent use, so each render makes its own.
type faces struct {
	title, subtitle, heading, body, small, label font.Face
}

// newFaces makes the faces at scale times their screen sizes.
func newFaces(scale float64) *faces {
	reg, bold := fonts()
	mk := func(f *opentype.Font, size float64) font.Face {
		face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size * scale, DPI: 72, Hinting: font.HintingFull})
		if err != nil {
			panic("report: font face: " + err.Error())
		}
		return face
	}
	return &faces{
		title:    mk(bold, 24),
		subtitle: mk(reg, 15),
		heading:  mk(bold, 15),
		body:     mk(bold, 13),
		small:    mk(reg, 12),
		label:    mk(bold, 13),
	}
}

func (f *faces) close() {
	for _, face := range []font.Face{f.title, f.subtitle, f.heading, f.body, f.small, f.label} {
		_ = face.Close()
	}
}

// text draws s with its baseline starting at (x, y).
func (c *canvas) text(face font.Face, s string, x, y int, col color.Color) {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: face, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// haloText draws s with a white halo, legible over any map content.
func (c *canvas) haloText(face font.Face, s string, x, y int, col color.Color) {
	for _, o := range [][2]int{{-1, -1}, {0, -1}, {1, -1}, {-1, 0}, {1, 0}, {-1, 1}, {0, 1}, {1, 1}, {0, -2}, {0, 2}, {-2, 0}, {2, 0}} {
		c.text(face, s, x+o[0], y+o[1], color.White)
	}
	c.text(face, s, x, y, col)
}

func textWidth(face font.Face, s string) int {
	return font.MeasureString(face, s).Ceil()
}

// wrap breaks s into at most maxLines lines no wider than w pixels; the last
// line ends in an ellipsis when text was left out.
func wrap(face font.Face, s string, w, maxLines int) []string {
	words := strings.Fields(s)
	var lines []string
	cur := ""
	for i := 0; i < len(words); i++ {
		next := words[i]
		if cur != "" {
			next = cur + " " + words[i]
		}
		if textWidth(face, next) <= w || cur == "" {
			cur = next
			continue
		}
		lines = append(lines, cur)
		cur = words[i]
		if len(lines) == maxLines {
			break
		}
	}
	if cur != "" && len(lines) < maxLines {
		lines = append(lines, cur)
		cur = ""
	}
	if len(lines) == 0 {
		return nil
	}
	truncated := cur != "" || strings.Join(lines, " ") != strings.Join(words, " ")
	last := lines[len(lines)-1]
	if truncated || textWidth(face, last) > w {
		for len(last) > 0 && textWidth(face, last+"…") > w {
			r := []rune(last)
			last = string(r[:len(r)-1])
		}
		lines[len(lines)-1] = strings.TrimRight(last, " ") + "…"
	}
	return lines
}

package austates

import (
	"math"
	"sync"

	"github.com/paulmach/orb"
)

// The state lookup keeps every ring's bound, computed once: orb's
// planar.RingContains computes the bound of the whole ring (a state outline
// of thousands of vertices) on every call, which was a third of the CPU of
// generating the synthetic layers. Same answers as planar's
// MultiPolygonContains, point for point (TestStateAtMatchesPlanar).
type locState struct {
	code  string
	bound orb.Bound
	polys [][]locRing // outer ring first, then holes
}

type locRing struct {
	bound orb.Bound
	ring  orb.Ring
}

var locator = sync.OnceValue(func() []locState {
	var out []locState
	for _, s := range get().states {
		ls := locState{code: s.Code, bound: s.Geometry.Bound()}
		for _, poly := range s.Geometry {
			var rings []locRing
			for _, r := range poly {
				rings = append(rings, locRing{bound: r.Bound(), ring: r})
			}
			ls.polys = append(ls.polys, rings)
		}
		out = append(out, ls)
	}
	return out
})

// contains is planar.MultiPolygonContains.
func (s *locState) contains(p orb.Point) bool {
	for _, poly := range s.polys {
		if len(poly) == 0 || !poly[0].contains(p) {
			continue
		}
		in := true
		for _, hole := range poly[1:] {
			if hole.contains(p) {
				in = false
				break
			}
		}
		if in {
			return true
		}
	}
	return false
}

// contains is planar.RingContains with the ring's bound computed once.
func (r *locRing) contains(p orb.Point) bool {
	if len(r.ring) == 0 || !r.bound.Contains(p) {
		return false
	}
	ring := r.ring
	c, on := rayIntersect(p, ring[0], ring[len(ring)-1])
	if on {
		return true
	}
	for i := 0; i < len(ring)-1; i++ {
		inter, on := rayIntersect(p, ring[i], ring[i+1])
		if on {
			return true
		}
		if inter {
			c = !c
		}
	}
	return c
}

// rayIntersect is orb/planar's (MIT licence; originally
// http://rosettacode.org/wiki/Ray-casting_algorithm#Go), copied because it
// is not exported.
func rayIntersect(p, s, e orb.Point) (intersects, on bool) {
	if s[0] > e[0] {
		s, e = e, s
	}
	switch p[0] {
	case s[0]:
		if p[1] == s[1] {
			return false, true
		} else if s[0] == e[0] {
			if s[1] > e[1] && s[1] >= p[1] && p[1] >= e[1] {
				return false, true
			}
			if e[1] > s[1] && e[1] >= p[1] && p[1] >= s[1] {
				return false, true
			}
		}
		p[0] = math.Nextafter(p[0], math.Inf(1))
	case e[0]:
		if p[1] == e[1] {
			return false, true
		}
		p[0] = math.Nextafter(p[0], math.Inf(1))
	}
	if p[0] < s[0] || p[0] > e[0] {
		return false, false
	}
	if s[1] > e[1] {
		if p[1] > s[1] {
			return false, false
		} else if p[1] < e[1] {
			return true, false
		}
	} else {
		if p[1] > e[1] {
			return false, false
		} else if p[1] < s[1] {
			return true, false
		}
	}
	rs := (p[1] - s[1]) / (p[0] - s[0])
	ds := (e[1] - s[1]) / (e[0] - s[0])
	if rs == ds {
		return false, true
	}
	return rs <= ds, false
}

package basemap

import "github.com/paulmach/orb"

// cloneGeometry deep-copies g (orb's Clone for the types a tile holds).
func cloneGeometry(g orb.Geometry) orb.Geometry {
	if g == nil {
		return nil
	}
	return orb.Clone(g)
}

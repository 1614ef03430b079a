package content

import (
	"slices"

	"siteenv/report"
)

// Detail maps. A section map draws to its widest search distance (up to
// 2 km), and every key points at its feature's point nearest the site: when
// the nearest records all lie within a few hundred metres, their keys
// pile up around the site in a few millimetres of the page. A detail map
// draws those records at a larger scale, as the site plans of commercial
// reports do.
const (
	// detailMinKeys: fewer keys than this near the site do not crowd it.
	detailMinKeys = 6
	// detailZoom: the detail map draws at least this much larger.
	detailZoom = 4
)

// detailRadii are the distances a detail map may draw to, smallest first.
var detailRadii = []float64{250, 500}

// detailMap gives rs a detail map when at least detailMinKeys of its keyed
// features lie within a detail radius at most 1/detailZoom of the section
// map's: the smallest such radius. Those features' keys move from the
// section map to the detail map, so every key is still drawn once.
// drawnAt holds, per layer of rs.Map, each drawn feature's distance.
func detailMap(rs *report.ReportSection, drawnAt [][]float64) {
	if rs.Map.Site == nil {
		return
	}
	for _, r := range detailRadii {
		if r*detailZoom > rs.MapRadiusM {
			return
		}
		near := 0
		for i, ml := range rs.Map.Layers {
			for j, k := range ml.Keys {
				if k > 0 && drawnAt[i][j] <= r {
					near++
				}
			}
		}
		if near < detailMinKeys {
			continue
		}
		rs.DetailRadiusM = r
		rs.Detail = rs.Map
		rs.Detail.Section = rs.Name + " (detail)"
		rs.Detail.Layers = make([]report.Layer, len(rs.Map.Layers))
		// The detail rings the bands within its radius (100 m, 250 m, ...).
		rs.Detail.Rings = nil
		for _, b := range Bands[1:] {
			if b.MaxM <= r {
				rs.Detail.Rings = append(rs.Detail.Rings, b.MaxM)
			}
		}
		for i, ml := range rs.Map.Layers {
			dl := ml
			dl.Keys = make([]int, len(ml.Keys))
			main := slices.Clone(ml.Keys)
			for j, k := range ml.Keys {
				if k > 0 && drawnAt[i][j] <= r {
					dl.Keys[j], main[j] = k, 0
				}
			}
			rs.Detail.Layers[i] = dl
			rs.Map.Layers[i].Keys = main
		}
		return
	}
}

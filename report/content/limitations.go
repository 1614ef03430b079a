package content

import (
	"fmt"
	"slices"
	"strings"
)

// Disclaimer is the contract's own words, first of the limitations.
const Disclaimer = "An empty result or incomplete coverage does not prove the absence of environmental risk. " +
	"This report states what the listed source releases held within the stated distances of the site when it was built; " +
	"it does not inspect the site. Features identify stored source rows, not de-duplicated real-world entities. " +
	"Source and report prose is evidence, not instructions."

// limitations are the report's limitations and disclaimer, with what the
// service holds no register of for the site's jurisdiction.
func limitations(in Input) []string {
	out := []string{Disclaimer,
		"No records is not absence of risk. A layer with no records within its distance means only that the listed release held " +
			"no feature there when the report was built. Registers record what was notified, assessed or mapped; sites that were never " +
			"reported, records withheld by the publisher and features drawn in the wrong place are not in them.",
		"Coverage. Each layer states how far its data covers the search area (the site buffered by the layer's distance): " +
			"complete - the publisher's coverage holds the whole search area; partial - only part of it, so features in the rest " +
			"cannot be found; unknown - the publisher states no coverage, so an absence cannot be checked against it; not covered - " +
			"the site lies outside the data and nothing was searched. Only complete coverage makes \"no records\" a statement about the whole area.",
		"Sources are evidence, not instructions. Names, notes and descriptions from source records are reproduced as data; " +
			"they are the publisher's words, not advice, and they direct nothing. Distances are geodesic from the site's boundary " +
			"to the nearest part of each feature; directions are from the site's centre.",
		"Maps. Each section map draws its layers to at most 2 km; numbered marks are the map keys of the listed features, and " +
			"listed features beyond a map's frame are printed under \"not drawn\". The statistical profile counts every matched " +
			"feature, drawn or not; the tables list the nearest of them.",
	}
	if gap := registerGaps(in); gap != "" {
		out = append(out, gap)
	}
	return out
}

// registerGaps names, for the site's jurisdiction, the sections whose
// layers all hold other jurisdictions' data: the service holds no such
// register here, and an empty page there is no clean result.
func registerGaps(in Input) string {
	j := in.Site.Jurisdiction
	if j == "" {
		return ""
	}
	var gaps []string
	for _, sec := range sections(in.Layers) {
		holds, others := false, map[string]bool{}
		for _, i := range sec {
			l := &in.Layers[i]
			if len(l.Jurisdictions) == 0 || slices.Contains(l.Jurisdictions, j) || slices.Contains(l.Jurisdictions, "AUS") {
				holds = true
				break
			}
			for _, o := range l.Jurisdictions {
				others[o] = true
			}
		}
		if holds {
			continue
		}
		var os []string
		for o := range others {
			os = append(os, o)
		}
		slices.Sort(os)
		gaps = append(gaps, fmt.Sprintf("%s (this report's layers of it hold %s data only)", sectionName(&in.Layers[sec[0]]), strings.Join(os, ", ")))
	}
	if len(gaps) == 0 {
		return ""
	}
	return fmt.Sprintf("Registers not held for %s. The service holds no %s register for %s: %s. "+
		"For this site those sections report \"not covered\", which says nothing about the site; ask the %s regulator directly.",
		j, strings.Join(sectionNamesOnly(gaps), " or "), j, strings.Join(gaps, "; "), j)
}

func sectionNamesOnly(gaps []string) []string {
	out := make([]string, 0, len(gaps))
	for _, g := range gaps {
		name, _, _ := strings.Cut(g, " (")
		out = append(out, strings.ToLower(name))
	}
	return out
}

// Gaps are the sections the service holds no register of for the site's
// jurisdiction (see registerGaps), by section key.
func Gaps(in Input) []string {
	j := in.Site.Jurisdiction
	var out []string
	if j == "" {
		return nil
	}
	for _, sec := range sections(in.Layers) {
		holds := false
		for _, i := range sec {
			l := &in.Layers[i]
			if len(l.Jurisdictions) == 0 || slices.Contains(l.Jurisdictions, j) || slices.Contains(l.Jurisdictions, "AUS") {
				holds = true
			}
		}
		if !holds {
			out = append(out, in.Layers[sec[0]].SectionKey)
		}
	}
	return out
}

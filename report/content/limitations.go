package content

import (
	"cmp"
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
		"Maps and records. Each section map draws its layers to at most 2 km. Every matched feature has a map key and is listed: " +
			"within its layer's detail distance as a record card with every field of the layer's schema, beyond it as a row of " +
			"Appendix A; a record beyond the map's frame says so. Where a map is too crowded to print every key clear of the marks, " +
			"the farther records' keys are left off the map, never their rows. The statistical profile counts the same features.",
	}
	if gap := registerGaps(in); gap != "" {
		out = append(out, gap)
	}
	return out
}

// registerGaps names, for the site's jurisdiction, the sections whose
// state registers all belong to other jurisdictions: the service holds
// no such register here, and an empty page there is no clean result.
func registerGaps(in Input) string {
	gaps := Gaps(in)
	if len(gaps) == 0 {
		return ""
	}
	j := in.Site.Jurisdiction
	var parts []string
	for _, g := range gaps {
		parts = append(parts, fmt.Sprintf("%s (the service's %s registers cover %s only)", g.Section, strings.ToLower(g.Section), strings.Join(g.Others, ", ")))
	}
	return fmt.Sprintf("Registers not held for %s. The service holds no %s register of these kinds: %s. "+
		"National layers in those sections were searched, but they do not stand in for a %s register: \"no records\" there says "+
		"nothing about what a %s register would hold; ask the %s regulator directly.", j, j, strings.Join(parts, "; "), j, j, j)
}

// Gap is a section whose state registers all belong to other
// jurisdictions than the site's.
type Gap struct {
	Key, Section string
	// Others are the jurisdictions its state registers cover.
	Others []string
}

// Gaps are the themes (sections) the service holds no register of for
// the site's jurisdiction, across its whole catalogue (Input.Held), not
// just the order's layers: themes with state registers of two or more
// other jurisdictions and none of the site's (a kind of register the
// service keeps state by state, but not for this state). National layers
// of the theme do not fill the gap (Defence's PFAS sampling is no
// contaminated land register), and a single other state's regional layer
// (a koala habitat map) is no such gap.
func Gaps(in Input) []Gap {
	j := in.Site.Jurisdiction
	if j == "" {
		return nil
	}
	held := in.Held
	if held == nil {
		for _, l := range in.Layers {
			held = append(held, Held{SectionKey: l.SectionKey, SectionName: sectionName(&l), Jurisdictions: l.Jurisdictions})
		}
	}
	type theme struct {
		name   string
		holds  bool
		others []string
	}
	themes := map[string]*theme{}
	var keys []string
	for _, l := range held {
		t := themes[l.SectionKey]
		if t == nil {
			t = &theme{name: cmp.Or(l.SectionName, l.SectionKey)}
			themes[l.SectionKey] = t
			keys = append(keys, l.SectionKey)
		}
		if len(l.Jurisdictions) == 0 || slices.Contains(l.Jurisdictions, "AUS") {
			continue // national data: no state register
		}
		if slices.Contains(l.Jurisdictions, j) {
			t.holds = true
		}
		for _, o := range l.Jurisdictions {
			if !slices.Contains(t.others, o) {
				t.others = append(t.others, o)
			}
		}
	}
	slices.Sort(keys)
	var out []Gap
	for _, k := range keys {
		if t := themes[k]; !t.holds && len(t.others) >= 2 {
			slices.Sort(t.others)
			out = append(out, Gap{Key: k, Section: t.name, Others: t.others})
		}
	}
	return out
}

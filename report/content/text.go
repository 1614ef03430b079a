package content

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"

	"siteenv/report"
)

// Section is one section of a revision's retained text.
type Section struct{ Heading, Text string }

// Text is a revision's retained text: the site, the overview, the
// statistical profile, the site profile, one section per report section
// (each layer's outcome and listed features with their map keys), the
// changes since the previous revision, the sources and the limitations.
func Text(doc report.Report) []Section {
	var out []Section
	add := func(heading, body string) { out = append(out, Section{heading, strings.TrimRight(body, "\n")}) }
	var b strings.Builder
	s := doc.Site
	fmt.Fprintf(&b, "Site: %s\n", s.Name)
	for _, a := range s.Addresses {
		fmt.Fprintf(&b, "Address: %s\n", a)
	}
	if len(s.LotPlans) > 0 {
		fmt.Fprintf(&b, "Lot/plan: %s\n", strings.Join(s.LotPlans, ", "))
	}
	if s.Reference != "" {
		fmt.Fprintf(&b, "Reference: %s\n", s.Reference)
	}
	fmt.Fprintf(&b, "Centroid (GDA2020): latitude %.6f, longitude %.6f\n", s.Lat, s.Lon)
	if s.MGAZone > 0 {
		fmt.Fprintf(&b, "MGA2020 zone %d: easting %.2f, northing %.2f\n", s.MGAZone, s.Easting, s.Northing)
	}
	fmt.Fprintf(&b, "Area: %s m²\nJurisdiction: %s\nReport: %s, revision %d (%s)\nBuilt: %s\n",
		strconv.FormatFloat(math.Round(s.AreaM2), 'f', -1, 64), cmp.Or(s.Jurisdiction, "unknown"),
		doc.ReportID, doc.Revision, doc.RevisionID, s.Built)
	if doc.ReceiptID != "" {
		fmt.Fprintf(&b, "Receipt: %s\n", doc.ReceiptID)
	}
	add("Summary", b.String())

	b.Reset()
	for _, o := range doc.Overview {
		fmt.Fprintf(&b, "%s: %s", o.Section, o.Finding)
		if o.Detail != "" {
			fmt.Fprintf(&b, " (%s)", o.Detail)
		}
		b.WriteString("\n")
	}
	add("Overview", b.String())

	b.Reset()
	var labels []string
	for _, bd := range Bands {
		labels = append(labels, bd.Label)
	}
	fmt.Fprintf(&b, "Layer | %s | Total\n", strings.Join(labels, " | "))
	var notCovered []string
	for _, p := range doc.Profile {
		if p.NotCovered {
			notCovered = append(notCovered, p.Layer)
			continue
		}
		fmt.Fprintf(&b, "%s | ", p.Layer)
		if p.Note != "" {
			fmt.Fprintf(&b, "%s\n", p.Note)
			continue
		}
		var cs []string
		for _, c := range p.Counts {
			cs = append(cs, countText(c))
		}
		fmt.Fprintf(&b, "%s | %s\n", strings.Join(cs, " | "), countText(p.Total))
	}
	if len(notCovered) > 0 {
		fmt.Fprintf(&b, "Not covered here (the data does not reach the site): %s.\n", strings.Join(notCovered, "; "))
	}
	add("Statistical profile", b.String())

	b.Reset()
	if len(doc.SiteProfile) == 0 {
		b.WriteString("No listed feature of any layer lies on the site.")
	}
	for _, r := range doc.SiteProfile {
		fmt.Fprintf(&b, "[%d] %s: %s%s\n", r.Key, r.Layer, r.ID, fieldsText(r.Fields))
	}
	add("Site profile", b.String())

	for _, sec := range doc.Sections {
		b.Reset()
		if sec.Warning != "" {
			b.WriteString(sec.Warning + "\n\n")
		}
		if len(sec.NotCovered) > 0 {
			fmt.Fprintf(&b, "Not covered here: %s.\n\n", strings.Join(sec.NotCovered, "; "))
		}
		for _, l := range sec.Layers {
			if l.Reason == "outside_coverage" {
				continue
			}
			fmt.Fprintf(&b, "%s (%s)\nOutcome: %s", l.Name, l.ID, StatusText(l.Status, l.Reason))
			fmt.Fprintf(&b, "; matched: %s within %s; coverage: %s.\n", countText(l.Count), report.Distance(l.RadiusM), l.Coverage)
			if l.ReleaseID != "" {
				fmt.Fprintf(&b, "Release %s, schema %s.\n", l.ReleaseID, l.SchemaVersion)
			}
			if len(l.Cards)+len(l.Appendix) > 0 {
				fmt.Fprintf(&b, "Detail distance %s.\n", report.Distance(l.DetailM))
			}
			for _, r := range l.Cards {
				b.WriteString(rowText(r, drawnNote(r)))
			}
			for _, r := range l.Appendix {
				b.WriteString(rowText(r, " (appendix)"+drawnNote(r)))
			}
			b.WriteString("\n")
		}
		add(sec.Name, b.String())
	}
	if doc.Changes != nil {
		b.Reset()
		if len(doc.Changes) == 0 {
			b.WriteString("Nothing changed: every layer used the same release and found the same features.")
		}
		for _, c := range doc.Changes {
			fmt.Fprintf(&b, "%s: %s.\n", c.LayerID, strings.Join(ChangeParts(c), "; "))
		}
		add(fmt.Sprintf("Changes since revision %d", doc.Revision-1), b.String())
	}
	b.Reset()
	for _, r := range doc.Sources {
		fmt.Fprintf(&b, "%s: release %s; %s (%s); published %s, effective %s, retrieved %s; licence %s; coverage %s.",
			r.Layer, cmp.Or(r.Release, "none"), cmp.Or(r.Provider, "—"), cmp.Or(r.Variant, "—"), cmp.Or(r.Published, "—"),
			cmp.Or(r.Effective, "—"), cmp.Or(r.Retrieved, "—"), cmp.Or(r.Licence, "—"), r.Coverage)
		if r.Attribution != "" {
			fmt.Fprintf(&b, " Attribution: %s.", r.Attribution)
		}
		if r.URL != "" {
			fmt.Fprintf(&b, " %s", r.URL)
		}
		b.WriteString("\n")
	}
	add("Sources", b.String())
	add("Limitations", strings.Join(doc.Limitations, "\n\n"))
	return out
}

// ChangeParts says what changed for a layer, part by part.
func ChangeParts(c report.LayerChange) []string {
	var parts []string
	if c.OldRelease != c.NewRelease {
		parts = append(parts, "release "+cmp.Or(c.OldRelease, "none")+" → "+cmp.Or(c.NewRelease, "none"))
	}
	if c.OldStatus != c.NewStatus {
		parts = append(parts, "outcome "+cmp.Or(c.OldStatus, "none")+" → "+c.NewStatus)
	}
	if !sameInt(c.OldCount, c.NewCount) {
		parts = append(parts, "matched "+countText(c.OldCount)+" → "+countText(c.NewCount))
	}
	parts = append(parts, fmt.Sprintf("%d added, %d removed", c.AddedCount, c.RemovedCount))
	if len(c.Bands) > 0 {
		parts = append(parts, "bands "+strings.Join(c.Bands, ", "))
	}
	if len(c.Added) > 0 {
		parts = append(parts, "added "+strings.Join(c.Added, ", ")+more(len(c.Added), c.AddedCount))
	}
	if len(c.Removed) > 0 {
		parts = append(parts, "removed "+strings.Join(c.Removed, ", ")+more(len(c.Removed), c.RemovedCount))
	}
	return parts
}

func more(listed, count int) string {
	if count > listed {
		return fmt.Sprintf(" and %d more", count-listed)
	}
	return ""
}

func drawnNote(r report.Row) string {
	if r.Drawn {
		return ""
	}
	return " (not drawn: beyond the map)"
}

func rowText(r report.Row, note string) string {
	dir := "on site"
	if !r.OnSite {
		dir = Direction(r.BearingDeg)
	}
	return fmt.Sprintf("[%d] %s: %s %s%s%s\n", r.Key, r.ID, report.Distance(r.DistanceM), dir, note, fieldsText(r.Fields))
}

func fieldsText(fs []report.Field) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "; %s: %s", f.Name, f.Value)
	}
	return b.String()
}

// Direction is a bearing as a 16-point compass direction.
func Direction(deg float64) string {
	if math.IsNaN(deg) {
		return "on site"
	}
	points := []string{"N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW", "NW", "NNW"}
	return points[int(math.Mod(math.Round(math.Mod(deg+360, 360)/22.5), 16))]
}

func sameInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func countText(n *int) string {
	if n == nil {
		return "–"
	}
	return formatInt(*n)
}

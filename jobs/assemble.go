package jobs

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/paulmach/orb"

	"siteenv/engine"
	"siteenv/geo/austates"
	"siteenv/ledger"
	"siteenv/report"
	"siteenv/report/content"
)

// assembleInput hands a build's site, layers and parcels to
// report/content, which decides what the report says.
func assembleInput(rep ledger.Report, revID uuid.UUID, number int, built time.Time, site ledger.Site, refs []ledger.ExternalRef,
	jurisdiction string, siteGeom orb.Geometry, layers []*builtLayer, parcels []content.Parcel) content.Input {
	name := site.ID.String()
	if site.Name != nil && *site.Name != "" {
		name = *site.Name
	}
	in := content.Input{ReportID: rep.ID.String(), RevisionID: revID.String(), Revision: number, Built: built, Parcels: parcels,
		Site: content.Site{ID: site.ID.String(), Name: name, AreaM2: site.AreaM2, Jurisdiction: jurisdiction, Geometry: siteGeom,
			JurisdictionNamed: jurisdiction != "" && !slices.Equal(austates.StatesOf(siteGeom), []string{jurisdiction})}}
	if rep.PurchaseID != nil {
		in.ReceiptID = rep.PurchaseID.String()
	}
	for _, ref := range refs {
		in.Site.References = append(in.Site.References, ref.Namespace+": "+ref.Reference)
	}
	for _, l := range layers {
		status, reason, coverage, count := layerStatus(l)
		cl := content.Layer{ID: l.id, Name: l.name(), SectionKey: l.layer.SectionKey, SectionName: l.sectionName(),
			Jurisdictions: l.layer.Jurisdictions, RadiusM: l.radiusM, Status: status, Reason: reason, Coverage: coverage}
		if l.layer.DetailM != nil {
			cl.DetailM = *l.layer.DetailM
		}
		if count != nil {
			n := int(*count)
			cl.Count = &n
		}
		if l.release != nil {
			cl.ReleaseID, cl.SchemaVersion = l.release.ReleaseID, l.release.SchemaVersion
			cl.FieldSchema, cl.Units = l.release.FieldSchema, l.release.Units
		}
		for _, s := range l.sources {
			cl.Sources = append(cl.Sources, content.Source{Provider: s.Provider, Variant: s.SourceVariantID, Licence: s.Licence,
				Attribution: s.Attribution, URL: deref(s.SourceURL), Published: deref(s.SourcePublishedAt), Effective: deref(s.SourceEffectiveAt),
				Retrieved: deref(s.RetrievedAt)})
		}
		if l.res.Status == engine.StatusDataPresent {
			cl.Features = make([]content.Feature, len(l.res.Features))
			for i := range l.res.Features {
				f := &l.res.Features[i]
				cl.Features[i] = content.Feature{ID: f.ID, DistanceM: f.DistanceM, Geometry: f.Geometry, Properties: f.Properties}
			}
		}
		in.Layers = append(in.Layers, cl)
	}
	return in
}

// evidence freezes what the report states: per layer its outcome, its
// profile bands and its listed features with their map keys; the site's
// location; the site profile.
func evidence(in content.Input, out content.Output, site ledger.Site, built time.Time) Evidence {
	loc := out.Location
	ev := Evidence{Version: EvidenceVersion, BuiltAt: built, SiteProfile: []EvidenceKeyed{},
		Site: EvidenceSite{SiteID: site.ID.String(), Name: site.Name, Fingerprint: site.Fingerprint, AreaM2: site.AreaM2,
			Jurisdiction: in.Site.Jurisdiction, Location: &EvidenceLocation{Longitude: loc.Lon, Latitude: loc.Lat,
				Addresses: nonNil(loc.Addresses), LotPlans: nonNil(loc.LotPlans), LGAs: nonNil(loc.LGAs), TimeZone: loc.TimeZone}}}
	if loc.MGAZone > 0 {
		z, e, n := loc.MGAZone, loc.Easting, loc.Northing
		ev.Site.Location.MGAZone, ev.Site.Location.Easting, ev.Site.Location.Northing = &z, &e, &n
	}
	for i, l := range in.Layers {
		f := out.Layers[i]
		e := EvidenceLayer{LayerID: l.ID, Name: l.Name, SectionKey: l.SectionKey, SectionName: sectionOf(l),
			RadiusM: l.RadiusM, DataStatus: l.Status, Coverage: l.Coverage, MapRadiusM: f.MapRadiusM, DetailM: f.DetailM,
			Provenance: []EvidenceProvenance{}, Features: []EvidenceFeature{}, NotDrawn: []int{}}
		if l.Count != nil {
			n := int64(*l.Count)
			e.MatchedCount = &n
		}
		if l.Reason != "" {
			reason := l.Reason
			e.Reason = &reason
		}
		if l.ReleaseID != "" {
			rel, schema := l.ReleaseID, l.SchemaVersion
			e.ReleaseID, e.SchemaVersion = &rel, &schema
		}
		if e.MatchedCount != nil {
			for j, b := range content.Bands {
				eb := EvidenceBand{Band: b.Key, MinM: b.MinM, MaxM: b.MaxM}
				if c := f.Bands[j]; c != nil {
					n := int64(*c)
					eb.Count = &n
				}
				e.Bands = append(e.Bands, eb)
			}
		}
		for _, lf := range f.Listed {
			ef := EvidenceFeature{FeatureID: lf.FeatureID, DistanceM: lf.DistanceM, MapKey: lf.Key, OnSite: lf.OnSite, Drawn: lf.Drawn, Band: lf.Band,
				Listed: "appendix"}
			if lf.Card {
				ef.Listed = "card"
			}
			if b := lf.BearingDeg; !math.IsNaN(b) {
				ef.BearingDeg = &b
			}
			e.Features = append(e.Features, ef)
			if !lf.Drawn {
				e.NotDrawn = append(e.NotDrawn, lf.Key)
			}
			if lf.OnSite {
				ev.SiteProfile = append(ev.SiteProfile, EvidenceKeyed{MapKey: lf.Key, LayerID: l.ID, FeatureID: lf.FeatureID})
			}
		}
		ev.Layers = append(ev.Layers, e)
	}
	return ev
}

// attachProvenance adds each layer's release sources to the evidence.
func attachProvenance(ev *Evidence, layers []*builtLayer) {
	for _, l := range layers {
		e := evFor(ev, l.id)
		if e == nil || l.release == nil {
			continue
		}
		for _, s := range l.sources {
			e.Provenance = append(e.Provenance, EvidenceProvenance{ReleaseID: l.release.ReleaseID, Source: s})
		}
	}
}

func sectionOf(l content.Layer) string {
	switch {
	case l.SectionName != "":
		return l.SectionName
	case l.SectionKey != "":
		return l.SectionKey
	}
	return "Other"
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// retainedText is the revision's text content, as report/content words it.
func retainedText(doc report.Report) []ledger.ReportSection {
	var out []ledger.ReportSection
	for _, s := range content.Text(doc) {
		h := s.Heading
		out = append(out, ledger.ReportSection{Index: len(out), Heading: &h, Text: s.Text})
	}
	return out
}

// bandChanges says which profile bands' counts changed since the previous
// evidence, as data and as the PDF's words.
func bandChanges(prev, now []EvidenceBand) ([]EvidenceBandChange, []string) {
	if prev == nil || now == nil {
		return nil, nil
	}
	before := map[string]*int64{}
	for _, b := range prev {
		before[b.Band] = b.Count
	}
	var out []EvidenceBandChange
	var words []string
	for i, b := range now {
		p := before[b.Band]
		if sameCount(p, b.Count) {
			continue
		}
		out = append(out, EvidenceBandChange{Band: b.Band, PreviousCount: p, Count: b.Count})
		words = append(words, content.Bands[i].Label+" "+countWord(p)+" → "+countWord(b.Count))
	}
	return out, words
}

func countWord(n *int64) string {
	if n == nil {
		return "–"
	}
	return formatInt64(*n)
}

func formatInt64(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// movedFeatures: listed features of both revisions whose band changed, as
// data and as the PDF's words ("B-0100 moved 0–100 m → 100–250 m").
func movedFeatures(prev, now []EvidenceFeature) ([]EvidenceMove, []string) {
	before := map[string]string{}
	for _, f := range prev {
		if f.Band != "" {
			before[f.FeatureID] = f.Band
		}
	}
	label := map[string]string{}
	for _, b := range content.Bands {
		label[b.Key] = b.Label
	}
	var out []EvidenceMove
	var words []string
	for _, f := range now {
		if pb, ok := before[f.FeatureID]; ok && f.Band != "" && pb != f.Band {
			out = append(out, EvidenceMove{FeatureID: f.FeatureID, PreviousBand: pb, Band: f.Band})
			words = append(words, f.FeatureID+" moved "+label[pb]+" → "+label[f.Band])
		}
	}
	return out, words
}

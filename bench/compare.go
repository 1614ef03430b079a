package bench

import (
	"context"
	"fmt"
	"math"
	"slices"

	"siteenv/engine"
	"siteenv/geo"
)

// maxExplained bounds the mismatched features examined with the reference
// (each costs a few milliseconds); any beyond are counted as mismatches.
const maxExplained = 500

// mismatch is a feature one side returned and the other did not.
type mismatch struct {
	Query     int
	Kind      siteKind
	RadiusM   float64
	LayerID   string
	FeatureID string
	// InEngine: the engine returned it (else PostGIS did).
	InEngine bool
	// Distances from the site as each side and the reference measure it.
	EngineM, PostGISM, ReferenceM float64
	// ReferenceIn: the reference says it is within the radius.
	ReferenceIn bool
	// Boundary: within boundaryTolerance of the radius: either answer is
	// right, and the mismatch is not counted.
	Boundary bool
}

// EngineWrong: the engine's answer is not the reference's.
func (m mismatch) EngineWrong() bool { return !m.Boundary && m.InEngine != m.ReferenceIn }

func (m mismatch) String() string {
	side := "PostGIS only"
	if m.InEngine {
		side = "engine only"
	}
	verdict := "reference says out"
	if m.ReferenceIn {
		verdict = "reference says in"
	}
	switch {
	case m.Boundary:
		verdict += ": within 1 cm of the radius, excluded"
	case m.EngineWrong():
		verdict += ": ENGINE WRONG"
	default:
		verdict += ": PostGIS wrong (its sphere-then-spheroid distance)"
	}
	engine := "-"
	if m.InEngine {
		engine = fmt.Sprintf("%.4f m", m.EngineM)
	}
	return fmt.Sprintf("query %d (%s site, radius %.4f m) layer %s feature %s: %s; distance engine %s, PostGIS %.4f m, reference %.4f m; %s",
		m.Query, m.Kind, m.RadiusM, m.LayerID, m.FeatureID, side, engine, m.PostGISM, m.ReferenceM, verdict)
}

// comparison is the outcome of checking both sides' answers.
type comparison struct {
	Compared   int   // layer results compared
	Failed     int   // layer results the engine failed on a limit (not compared)
	Matched    int64 // features the engine returned in compared layers
	Differing  int   // layer results whose feature sets differ
	Mismatches []mismatch
	Boundary   int // mismatched features excluded as boundary cases
	// EngineWrong counts mismatched features the engine got wrong (by the
	// reference), PostGISWrong those PostGIS got wrong.
	EngineWrong, PostGISWrong int
	// Unexplained counts differing layer results whose rerun agreed, or
	// that were not examined (beyond maxExplained).
	Unexplained int
	// OutsideCoverage counts layer results the engine answered
	// outside_coverage (as the contract asks when the search area misses
	// the release's coverage polygon) where PostGIS, which knows no
	// coverage, found OutsideFeatures features: data that lies outside its
	// own declared coverage, not a distance error. Examples has a few.
	OutsideCoverage int
	OutsideFeatures int64
	OutsideExamples []outsideExample
	// CoverageWrong counts examples whose feature lies wholly inside the
	// coverage: the engine's outside_coverage was wrong.
	CoverageWrong int
}

// outsideExample is a feature PostGIS found where the engine's answer was
// outside_coverage, and how the feature itself relates to the coverage.
type outsideExample struct {
	Query     int
	LayerID   string
	FeatureID string
	// FeatureCoverage is engine.CoverageOf(feature, coverage): "none" means
	// the feature lies wholly outside its release's coverage polygon.
	FeatureCoverage engine.Coverage
}

// engineWrong: the feature lies wholly inside the coverage and within the
// radius, so the search area meets the coverage: outside_coverage was
// wrong.
func (x outsideExample) engineWrong() bool { return x.FeatureCoverage == engine.CoverageComplete }

func (x outsideExample) String() string {
	verdict := "data outside its declared coverage"
	if x.engineWrong() {
		verdict = "ENGINE COVERAGE WRONG: the feature lies inside the coverage"
	}
	return fmt.Sprintf("query %d layer %s feature %s: the engine answered outside_coverage; the feature's own coverage is %s: %s",
		x.Query, x.LayerID, x.FeatureID, x.FeatureCoverage, verdict)
}

// compare checks the digests of both passes and examines each difference
// by running that query layer again on both sides.
func compare(ctx context.Context, e *engine.Engine, pg *postgis, ds *dataset, qs []query, eng, pgs [][]outcome) (comparison, error) {
	var c comparison
	examined := 0
	for i, q := range qs {
		for j, li := range q.layers {
			a, b := eng[i][j], pgs[i][j]
			if a.failed != "" {
				c.Failed++
				continue
			}
			c.Compared++
			c.Matched += int64(a.n)
			if a.digest == b.digest {
				continue
			}
			if a.outside && a.n == 0 {
				c.OutsideCoverage++
				c.OutsideFeatures += int64(b.n)
				if len(c.OutsideExamples) < maxExplained {
					x, err := explainOutside(ctx, pg, ds, i, q, li)
					if err != nil {
						return c, err
					}
					c.OutsideExamples = append(c.OutsideExamples, x)
					if x.engineWrong() {
						c.CoverageWrong++
					}
				}
				continue
			}
			c.Differing++
			if examined >= maxExplained {
				c.Unexplained++
				continue
			}
			ms, err := explain(ctx, e, pg, ds, i, q, li)
			if err != nil {
				return c, err
			}
			if len(ms) == 0 {
				c.Unexplained++
			}
			examined += len(ms)
			for _, m := range ms {
				switch {
				case m.Boundary:
					c.Boundary++
				case m.EngineWrong():
					c.EngineWrong++
				default:
					c.PostGISWrong++
				}
			}
			c.Mismatches = append(c.Mismatches, ms...)
		}
	}
	return c, nil
}

// explain reruns layer li of query i on both sides and measures every
// feature only one of them returned with the reference.
func explain(ctx context.Context, e *engine.Engine, pg *postgis, ds *dataset, i int, q query, li int) ([]mismatch, error) {
	l := ds.layers[li]
	eng, err := engineLayerIDs(ctx, e, ds, q, li)
	if err != nil {
		return nil, fmt.Errorf("bench: rerun engine query %d: %w", i, err)
	}
	pgs := map[string]bool{}
	if err := pg.query(ctx, 0, queryArgs(ds, &q, []int{li}), func(_, id []byte) { pgs[string(id)] = true }); err != nil {
		return nil, fmt.Errorf("bench: rerun postgis query %d: %w", i, err)
	}
	var ids []string
	for id := range eng {
		if !pgs[id] {
			ids = append(ids, id)
		}
	}
	for id := range pgs {
		if _, ok := eng[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]mismatch, 0, len(ids))
	for _, id := range ids {
		raw, pgDist, err := pg.feature(ctx, l.id, id, q.wkb)
		if err != nil {
			return nil, err
		}
		g, err := geo.DecodeWKB(raw, math.MaxInt)
		if err != nil {
			return nil, fmt.Errorf("bench: feature %s/%s: %w", l.id, id, err)
		}
		ref := referenceDistance(q.site, g)
		in, boundary := ref.within(q.radius)
		engDist, inEngine := eng[id]
		if !inEngine {
			engDist = math.NaN()
		}
		out = append(out, mismatch{
			Query: i, Kind: q.kind, RadiusM: q.radius, LayerID: l.id, FeatureID: id, InEngine: inEngine,
			EngineM: engDist, PostGISM: pgDist, ReferenceM: ref.D, ReferenceIn: in, Boundary: boundary,
		})
	}
	return out, nil
}

// explainOutside finds one feature PostGIS returned for layer li of query
// i and classifies it against the release's coverage.
func explainOutside(ctx context.Context, pg *postgis, ds *dataset, i int, q query, li int) (outsideExample, error) {
	l := ds.layers[li]
	x := outsideExample{Query: i, LayerID: l.id}
	err := pg.query(ctx, 0, queryArgs(ds, &q, []int{li}), func(_, id []byte) {
		if x.FeatureID == "" {
			x.FeatureID = string(id)
		}
	})
	if err != nil || x.FeatureID == "" {
		return x, err
	}
	raw, _, err := pg.feature(ctx, l.id, x.FeatureID, q.wkb)
	if err != nil {
		return x, err
	}
	g, err := geo.DecodeWKB(raw, math.MaxInt)
	if err != nil {
		return x, fmt.Errorf("bench: feature %s/%s: %w", l.id, x.FeatureID, err)
	}
	x.FeatureCoverage = engine.CoverageOf(g, l.coverage)
	return x, nil
}

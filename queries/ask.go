package queries

// Ask is what of a POST /queries request its admission and its answer use.
type Ask struct {
	LayerIDs        []string
	RadiusM         float64
	IncludeGeometry bool
	// Wait is the request's initial wait in seconds (Prefer: wait=N), and
	// PageSize the first page's size.
	Wait, PageSize int
}

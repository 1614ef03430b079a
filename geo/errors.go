package geo

import "errors"

// Sentinel errors. Match them with errors.Is; the concrete errors returned
// carry more detail (see UnsupportedCRSError and ValidationError).
var (
	// ErrUnsupportedCRS: a CRS name or EPSG code outside the contract's list.
	ErrUnsupportedCRS = errors.New("unsupported crs")
	// ErrOutOfDomain: a coordinate outside the domain where a projection is
	// defined and accurate (see ToCRS84 and FromCRS84).
	ErrOutOfDomain = errors.New("coordinate outside the projection domain")
	// ErrInvalidGeometry: a geometry that breaks the contract's rules for site
	// geometry. Every *ValidationError matches it.
	ErrInvalidGeometry = errors.New("invalid geometry")
	// ErrTooManyVertices: a geometry with more positions than allowed. The
	// *ValidationError reporting it matches both this and ErrInvalidGeometry.
	ErrTooManyVertices = errors.New("too many vertices")
)

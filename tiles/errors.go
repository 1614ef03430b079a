package tiles

import (
	"context"
	"errors"
	"fmt"
)

// Errors returned by this package. Match them with errors.Is; the messages are
// for people, not for code.
var (
	// ErrInvalidSchema reports a field schema that breaks the convention in
	// schema.go.
	ErrInvalidSchema = errors.New("tiles: invalid field schema")
	// ErrInvalidProperties reports a feature whose properties do not satisfy
	// the layer's field schema. The concrete error is a *PropertyError.
	ErrInvalidProperties = errors.New("tiles: invalid properties")
	// ErrInvalidFeature reports a feature that cannot be written to a tile
	// (missing id, duplicate id, missing or unsupported geometry).
	ErrInvalidFeature = errors.New("tiles: invalid feature")
	// ErrInvalidTile reports a Parquet file that is not a readable tile or
	// GeoParquet file.
	ErrInvalidTile = errors.New("tiles: invalid tile")
	// ErrInvalidManifest reports a manifest that fails strict parsing or
	// validation.
	ErrInvalidManifest = errors.New("tiles: invalid manifest")
)

// PropertyError describes why one property of a feature is invalid. It
// matches ErrInvalidProperties with errors.Is.
type PropertyError struct {
	Field  string // property name
	Reason string // what is wrong, e.g. "must be an integer"
}

func (e *PropertyError) Error() string {
	return fmt.Sprintf("property %q: %s", e.Field, e.Reason)
}

// Is reports whether target is ErrInvalidProperties.
func (e *PropertyError) Is(target error) bool { return target == ErrInvalidProperties }

// contextError returns context.Canceled or DeadlineExceeded when err was
// caused by a finished context, preserving errors.Is matching.
func contextError(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}

package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// Errors returned by this package. Match them with errors.Is; the messages are
// for people, not for code.
var (
	// ErrNotExist reports a missing object. It wraps fs.ErrNotExist, so
	// errors.Is(err, fs.ErrNotExist) also holds.
	ErrNotExist = fmt.Errorf("store: object does not exist: %w", fs.ErrNotExist)
	// ErrExists reports a Put to a key that already holds an object. It wraps
	// fs.ErrExist.
	ErrExists = fmt.Errorf("store: object already exists: %w", fs.ErrExist)
	// ErrInvalidKey reports a malformed object key or list prefix.
	ErrInvalidKey = errors.New("store: invalid key")
	// ErrInvalidURL reports a store URL that OpenStore cannot use.
	ErrInvalidURL = errors.New("store: invalid store url")
	// ErrInvalidRange reports a GetRange outside the object.
	ErrInvalidRange = errors.New("store: range outside the object")
	// ErrSizeMismatch reports a Put whose reader did not yield the declared
	// number of bytes.
	ErrSizeMismatch = errors.New("store: object size does not match")
)

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

package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Checker is implemented by stores that can tell whether they are reachable
// and readable more precisely than a Stat can (a file store whose directory
// vanished answers every Stat with ErrNotExist).
type Checker interface {
	Check(ctx context.Context) error
}

// checkKey is statted by Check for stores without a Checker; it need not exist.
const checkKey = "health/readiness-probe"

// Check reports whether s can be read: its own Check when it has one,
// otherwise a Stat that must succeed or find nothing. It reads no object
// data, so a readiness probe may call it every second.
func Check(ctx context.Context, s Store) error {
	if c, ok := s.(Checker); ok {
		return c.Check(ctx)
	}
	if _, err := s.Stat(ctx, checkKey); err != nil && !errors.Is(err, ErrNotExist) {
		return err
	}
	return nil
}

// Check implements Checker: the root is a directory this process can list.
func (s *FileStore) Check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := os.Open(s.root)
	if err != nil {
		return fmt.Errorf("store: file store root: %w", err)
	}
	defer d.Close()
	if _, err := d.Readdirnames(1); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("store: file store root: %w", err)
	}
	return nil
}

// Check implements Checker: the bucket answers and exists.
func (s *S3Store) Check(ctx context.Context) error {
	ok, err := s.core.BucketExists(ctx, s.bucket)
	if err != nil {
		if ctxErr := contextError(err); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("store: s3 bucket %q: %w", s.bucket, err)
	}
	if !ok {
		return fmt.Errorf("store: s3 bucket %q: %w", s.bucket, ErrNotExist)
	}
	return nil
}

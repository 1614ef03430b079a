//go:build !linux

package store

import (
	"errors"
	"os"
)

// openDirect is refused where O_DIRECT is not known: the blocks are
// written through the page cache.
func openDirect(string) (*os.File, error) { return nil, errors.New("store: no O_DIRECT here") }

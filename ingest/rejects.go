package ingest

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
)

// rejectLog writes rejected rows to a CSV file (file,row,reason), created
// at the first reject. With no path it only counts.
type rejectLog struct {
	path  string
	f     *os.File
	w     *csv.Writer
	n     int64
	first string // the first reject, for error messages
}

func (r *rejectLog) add(file string, row int64, reason string) error {
	r.n++
	if r.n == 1 {
		r.first = fmt.Sprintf("%s row %d: %s", file, row, reason)
	}
	if r.path == "" {
		return nil
	}
	if r.f == nil {
		f, err := os.Create(r.path)
		if err != nil {
			return fmt.Errorf("ingest: rejects file: %w", err)
		}
		r.f = f
		r.w = csv.NewWriter(f)
		if err := r.w.Write([]string{"file", "row", "reason"}); err != nil {
			return fmt.Errorf("ingest: rejects file: %w", err)
		}
	}
	if err := r.w.Write([]string{file, strconv.FormatInt(row, 10), reason}); err != nil {
		return fmt.Errorf("ingest: rejects file: %w", err)
	}
	return nil
}

func (r *rejectLog) close() error {
	if r.f == nil {
		return nil
	}
	r.w.Flush()
	err := r.w.Error()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	if err != nil {
		return fmt.Errorf("ingest: rejects file: %w", err)
	}
	return nil
}

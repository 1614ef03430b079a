package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// errNotDir is returned when a key's parent path is a file.
var errNotDir error = syscall.ENOTDIR

// FileStore is a Store in a directory tree: key "a/b/c" is the file
// <root>/a/b/c. Put writes a temporary file in the target directory, fsyncs
// it and hard-links it to its final name, which fails atomically when the
// name is taken, so a key is never observed half-written and never replaced,
// even across processes sharing the directory.
//
// A FileStore is safe for concurrent use.
type FileStore struct {
	root   string
	recent *recentObjects // nil unless KeepRecent
}

var _ Store = (*FileStore)(nil)

// NewFileStore opens (creating if needed) a store rooted at the absolute
// directory root.
func NewFileStore(root string) (*FileStore, error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("%w: file store root %q is not absolute", ErrInvalidURL, root)
	}
	root = filepath.Clean(root)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("store: create store root: %w", err)
	}
	return &FileStore{root: root}, nil
}

// Root returns the store's directory.
func (s *FileStore) Root() string { return s.root }

func (s *FileStore) path(key string) string {
	return filepath.Join(s.root, filepath.FromSlash(key))
}

// Put implements Store: Create, copy, Commit.
func (s *FileStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	w, err := s.Create(ctx, key)
	if err != nil {
		return err
	}
	defer w.Abort()
	n, err := io.Copy(w, ctxReader{ctx: ctx, r: r})
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	if size >= 0 && n != size {
		return fmt.Errorf("%w: put %s: read %d bytes, declared %d", ErrSizeMismatch, key, n, size)
	}
	return w.Commit()
}

var (
	_ Creator        = (*FileStore)(nil)
	_ VolatilePutter = (*FileStore)(nil)
)

// PutVolatile implements VolatilePutter: a temporary file written through
// the page cache and hard-linked into place, with no fsync of either and
// no direct I/O. The kernel writes it back in its time; on ext4 (ordered
// data) a crash before that leaves the file missing or short, never
// exposing blocks not yet written.
func (s *FileStore) PutVolatile(ctx context.Context, key string, data []byte) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	final := s.path(key)
	if _, err := os.Lstat(final); err == nil {
		return fmt.Errorf("%w: %s", ErrExists, key)
	}
	tmp, err := s.createTemp(filepath.Dir(final))
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("store: put %s: %w", key, err)
	}
	return link(tmp.Name(), key, final)
}

// Create implements Creator: the object is written to a temporary file in
// its directory and committed as Put commits (fsync, hard link, directory
// fsync).
func (s *FileStore) Create(ctx context.Context, key string) (Writer, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	final := s.path(key)
	if _, err := os.Lstat(final); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrExists, key)
	}
	tmp, err := s.createTemp(filepath.Dir(final))
	if err != nil {
		return nil, fmt.Errorf("store: put %s: %w", key, err)
	}
	if s.recent != nil {
		return s.createDirect(ctx, key, final, tmp), nil
	}
	return &fileWriter{ctx: ctx, key: key, final: final, tmp: tmp}, nil
}

// fileWriter is FileStore's Writer.
type fileWriter struct {
	ctx        context.Context
	key, final string
	tmp        *os.File // nil once finished
}

func (w *fileWriter) Write(p []byte) (int, error) {
	if w.tmp == nil {
		return 0, fmt.Errorf("store: write %s: %w", w.key, os.ErrClosed)
	}
	if err := w.ctx.Err(); err != nil {
		return 0, err
	}
	return w.tmp.Write(p)
}

func (w *fileWriter) Commit() error {
	if w.tmp == nil {
		return fmt.Errorf("store: commit %s: %w", w.key, os.ErrClosed)
	}
	tmp, name := w.tmp, w.tmp.Name()
	w.tmp = nil
	defer os.Remove(name)
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("store: put %s: sync: %w", w.key, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("store: put %s: close: %w", w.key, err)
	}
	return publish(w.ctx, name, w.key, w.final)
}

// publish gives the synced temporary file name its key's name final (a
// hard link, which fails when the key is taken) and makes the link
// durable: every writer's last step of Commit.
func publish(ctx context.Context, name, key, final string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := link(name, key, final); err != nil {
		return err
	}
	syncDir(filepath.Dir(final))
	return nil
}

// link makes the written file name visible as key (at final), whole:
// ErrExists when the key is taken.
func link(name, key, final string) error {
	if err := os.Link(name, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, key)
		}
		return fmt.Errorf("store: put %s: link: %w", key, err)
	}
	return nil
}

func (w *fileWriter) Abort() {
	if w.tmp == nil {
		return
	}
	w.tmp.Close()
	os.Remove(w.tmp.Name())
	w.tmp = nil
}

// createTemp makes a temporary file in dir, creating dir first. It retries
// when a concurrent Delete prunes the freshly made empty directory.
func (s *FileStore) createTemp(dir string) (*os.File, error) {
	var err error
	for range 5 {
		if err = os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		var f *os.File
		f, err = os.CreateTemp(dir, tmpPrefix+"*")
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return nil, err
}

// syncDir makes a link durable; failures are ignored because the data file
// itself is already synced and some filesystems refuse directory fsync.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Open implements Store.
func (s *FileStore) Open(ctx context.Context, key string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.recent != nil {
		if o := s.recent.acquire(key); o != nil {
			// Still there? Another process may have deleted it.
			if _, err := os.Lstat(s.path(key)); err != nil {
				s.recent.release(o)
				s.recent.remove(key)
				return nil, s.mapErr(key, err)
			}
			return &memObject{ctx: ctx, c: s.recent, o: o}, nil
		}
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, s.mapErr(key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: open %s: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	return &fileObject{ctx: ctx, f: f, size: fi.Size()}, nil
}

func (s *FileStore) mapErr(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
		return fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	return fmt.Errorf("store: %s: %w", key, err)
}

// Stat implements Store.
func (s *FileStore) Stat(ctx context.Context, key string) (Info, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(s.path(key))
	if err != nil {
		return Info{}, s.mapErr(key, err)
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	return Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime().UTC()}, nil
}

// List implements Store.
func (s *FileStore) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Walk the deepest directory that contains every match.
	base := s.root
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		base = s.path(prefix[:i])
	}
	out := []Info{}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
				return nil // vanished or not a directory: nothing to list
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted while listing
			}
			return err
		}
		out = append(out, Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime().UTC()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list %q: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete implements Store. Directories left empty are pruned up to the root.
func (s *FileStore) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := s.path(key)
	if s.recent != nil {
		s.recent.remove(key)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return s.mapErr(key, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err := os.Remove(p); err != nil {
		return s.mapErr(key, err)
	}
	for dir := filepath.Dir(p); dir != s.root && strings.HasPrefix(dir, s.root); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break // not empty (or already gone): stop pruning
		}
	}
	return nil
}

// fileObject is an Object backed by an open file.
type fileObject struct {
	ctx  context.Context
	f    *os.File
	size int64
}

func (o *fileObject) Size() int64 { return o.size }

func (o *fileObject) Close() error { return o.f.Close() }

func (o *fileObject) ReadAt(p []byte, off int64) (int, error) {
	if err := o.ctx.Err(); err != nil {
		return 0, err
	}
	n, short, err := readAtBounds(o.size, p, off)
	if err != nil || n == 0 {
		return 0, err
	}
	m, err := o.f.ReadAt(p[:n], off)
	if err == nil && short {
		err = io.EOF
	}
	return m, err
}

// GetRange implements Store.
func (s *FileStore) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	obj, err := s.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(key, obj.Size(), off, length); err != nil {
		obj.Close()
		return nil, err
	}
	return &rangeReader{ctx: ctx, r: io.NewSectionReader(obj, off, length), c: obj}, nil
}

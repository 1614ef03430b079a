package store

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// Store is an immutable object store addressed by slash-separated keys such
// as "releases/flood/r_0123.../manifest.json".
//
// Keys are validated by ValidateKey; a bad key yields ErrInvalidKey. A missing
// key yields an error matching ErrNotExist (and fs.ErrNotExist). Objects are
// never overwritten: Put to a taken key yields ErrExists, and of several
// concurrent Puts to one free key exactly one succeeds.
//
// Implementations are safe for concurrent use by multiple goroutines and, for
// the shared backends, by multiple processes.
type Store interface {
	// Put stores the size bytes read from r under key. size < 0 means
	// unknown. If r yields a different number of bytes than a non-negative
	// size, Put fails with ErrSizeMismatch and stores nothing.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Open opens key for random access. ctx bounds every read made through
	// the returned Object; cancel it (or Close the Object) when done.
	Open(ctx context.Context, key string) (Object, error)
	// GetRange streams length bytes of key starting at offset off, in one
	// request where the backend has ranged reads (an S3 ranged GET), for
	// sequential delivery of large objects; Open's ReadAt suits random access.
	// off+length beyond the object's size yields ErrInvalidRange (length 0 at
	// off == size is an empty read). The reader is bound to ctx; Close it.
	GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error)
	// Stat describes key.
	Stat(ctx context.Context, key string) (Info, error)
	// List returns every object whose key starts with prefix (a plain string
	// prefix, recursive), sorted by key. An empty prefix lists everything.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Delete removes key. It exists for temporary artifacts such as expired
	// query results; the service never deletes releases.
	Delete(ctx context.Context, key string) error
}

// VolatilePutter is a Store that can keep an object without making it
// durable (the file store): PutVolatile makes data visible under key, whole,
// at once, but a crash of the machine (not of the process) may lose the
// object or leave it shorter than data, never different bytes of the same
// length. For objects that can be made again and whose size the reader
// knows (a query's result: jobs.Runner.OpenResult). ErrExists when the key
// is taken.
type VolatilePutter interface {
	PutVolatile(ctx context.Context, key string, data []byte) error
}

// Creator is a Store that writes a new object in place: the bytes go
// straight to where the object will live, with no staging copy (the file
// store). Callers use it when available and Put otherwise.
type Creator interface {
	// Create starts writing key; nothing is visible under key until the
	// Writer's Commit. A taken key yields ErrExists, here or at Commit.
	Create(ctx context.Context, key string) (Writer, error)
}

// Writer is an object being written by Creator.Create.
type Writer interface {
	io.Writer
	// Commit makes the object durable and visible under its key, whole, or
	// fails and stores nothing (ErrExists when the key was taken
	// meanwhile). The Writer is finished either way.
	Commit() error
	// Abort drops what was written; after Commit it does nothing.
	Abort()
}

// Object is an open object: a context-aware random-access reader.
// ReadAt follows io.ReaderAt: a read that reaches the end of the object
// returns the bytes read and io.EOF. An Object is safe for concurrent ReadAt
// calls; Close must not race with reads.
type Object interface {
	io.ReaderAt
	// Size is the object's length in bytes.
	Size() int64
	// Close releases the object.
	Close() error
}

// Info describes a stored object.
type Info struct {
	Key     string
	Size    int64
	ModTime time.Time
}

// maxKeyLen bounds key length; S3 allows 1024 bytes including our prefix.
const maxKeyLen = 900

// tmpPrefix starts the names of the file store's temporary files; key
// segments may not start with it.
const tmpPrefix = ".siteenv-tmp-"

// ValidateKey reports whether key is a valid object key: non-empty UTF-8 of at
// most 900 bytes, slash-separated segments that are non-empty, not "." or
// "..", with no leading or trailing slash, no backslash and no control
// characters. Errors match ErrInvalidKey.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	return validatePath(key, false)
}

// validatePrefix checks a List prefix: like a key, but it may be empty and may
// end with a slash.
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return validatePath(prefix, true)
}

func validatePath(p string, isPrefix bool) error {
	if len(p) > maxKeyLen {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidKey, maxKeyLen)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidKey, p)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("%w: %q contains a control character or backslash", ErrInvalidKey, p)
		}
	}
	if strings.HasPrefix(p, "/") {
		return fmt.Errorf("%w: %q starts with a slash", ErrInvalidKey, p)
	}
	segs := strings.Split(p, "/")
	if isPrefix && strings.HasSuffix(p, "/") {
		segs = segs[:len(segs)-1]
	}
	for _, s := range segs {
		switch {
		case s == "":
			return fmt.Errorf("%w: %q has an empty segment", ErrInvalidKey, p)
		case s == "." || s == "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidKey, p, s)
		case strings.HasPrefix(s, tmpPrefix):
			return fmt.Errorf("%w: %q uses the reserved prefix %q", ErrInvalidKey, p, tmpPrefix)
		}
	}
	return nil
}

// S3Config holds the connection settings of an s3:// store.
type S3Config struct {
	// Endpoint is host[:port] of the S3 service, e.g. "s3.ap-southeast-2.amazonaws.com"
	// or "127.0.0.1:9000". An "http://" or "https://" scheme is accepted and
	// overrides UseSSL. Required for s3:// stores.
	Endpoint string
	// AccessKey and SecretKey are static credentials. Both empty means
	// anonymous access.
	AccessKey string
	SecretKey string
	// Region is the bucket's region. Empty: discovered from the service.
	Region string
	// UseSSL selects https. Default false; the command sets it to true
	// unless the endpoint says "http://".
	UseSSL bool
}

// WithDefaults returns c as NewS3Store uses it: an "http://" or "https://"
// scheme on Endpoint is taken off and sets UseSSL, and a trailing "/" is
// dropped. No other field has a default of its own.
func (c S3Config) WithDefaults() S3Config {
	switch {
	case strings.HasPrefix(strings.ToLower(c.Endpoint), "https://"):
		c.Endpoint, c.UseSSL = c.Endpoint[len("https://"):], true
	case strings.HasPrefix(strings.ToLower(c.Endpoint), "http://"):
		c.Endpoint, c.UseSSL = c.Endpoint[len("http://"):], false
	}
	c.Endpoint = strings.TrimSuffix(c.Endpoint, "/")
	return c
}

// validate reports a filled config an s3:// store cannot use
// (ErrInvalidURL, naming the setting).
func (c S3Config) validate() error {
	if c.Endpoint == "" {
		return fmt.Errorf("%w: s3 store needs an endpoint (SITEENV_S3_ENDPOINT)", ErrInvalidURL)
	}
	if strings.Contains(c.Endpoint, "/") {
		return fmt.Errorf("%w: s3 endpoint %q must be host[:port] (SITEENV_S3_ENDPOINT)", ErrInvalidURL, c.Endpoint)
	}
	return nil
}

// OpenStore opens the store named by rawURL:
//
//	file:///abs/path          a directory on a local or shared filesystem (created if missing)
//	s3://bucket[/prefix/...]  a bucket, optionally below a key prefix; uses s3cfg
//
// s3cfg is ignored for file:// stores.
func OpenStore(ctx context.Context, rawURL string, s3cfg S3Config) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("%w: %q: query, fragment and user info are not allowed", ErrInvalidURL, rawURL)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("%w: %q: file URLs must be file:///absolute/path", ErrInvalidURL, rawURL)
		}
		if u.Path == "" || !path.IsAbs(u.Path) {
			return nil, fmt.Errorf("%w: %q: file URLs must be file:///absolute/path", ErrInvalidURL, rawURL)
		}
		return NewFileStore(u.Path)
	case "s3":
		if u.Host == "" {
			return nil, fmt.Errorf("%w: %q: missing bucket", ErrInvalidURL, rawURL)
		}
		prefix := strings.Trim(u.Path, "/")
		if prefix != "" {
			if err := ValidateKey(prefix); err != nil {
				return nil, fmt.Errorf("%w: %q: bad prefix: %v", ErrInvalidURL, rawURL, err)
			}
		}
		return NewS3Store(ctx, s3cfg, u.Host, prefix)
	default:
		return nil, fmt.Errorf("%w: %q: scheme must be file or s3", ErrInvalidURL, rawURL)
	}
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// readAtBounds handles the io.ReaderAt edge cases shared by the stores: it
// returns how many bytes to read at off and whether the read is short.
func readAtBounds(size int64, p []byte, off int64) (n int, short bool, err error) {
	if off < 0 {
		return 0, false, fmt.Errorf("store: ReadAt: negative offset %d", off)
	}
	if off >= size {
		if len(p) == 0 {
			return 0, false, nil
		}
		return 0, true, io.EOF
	}
	if rem := size - off; int64(len(p)) > rem {
		return int(rem), true, nil
	}
	return len(p), false, nil
}

// checkRange validates a GetRange request against the object's size.
func checkRange(key string, size, off, length int64) error {
	if off < 0 || length < 0 || off > size || length > size-off {
		return fmt.Errorf("%w: %s: %d bytes at %d of %d", ErrInvalidRange, key, length, off, size)
	}
	return nil
}

// rangeReader is GetRange's reader: reads fail once ctx is done.
type rangeReader struct {
	ctx context.Context
	r   io.Reader
	c   io.Closer
}

func (r *rangeReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

func (r *rangeReader) Close() error { return r.c.Close() }

package store

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3Store is a Store in an S3 bucket, optionally below a key prefix.
//
// Put is a conditional write (If-None-Match: *), so the service itself
// refuses to replace an existing object and exactly one of several concurrent
// Puts to a key succeeds; this needs a service that implements conditional
// writes (AWS S3 since 2024, MinIO, versitygw >= 1.8). Open records the
// object's ETag and every ReadAt is a ranged GET conditional on it, so a read
// never mixes two versions of an object.
//
// An S3Store is safe for concurrent use.
type S3Store struct {
	core   *minio.Core
	bucket string
	prefix string // "" or "some/prefix/"
}

var _ Store = (*S3Store)(nil)

// NewS3Store connects to bucket (which must exist) with cfg. Keys are stored
// below prefix ("" for the bucket root).
func NewS3Store(ctx context.Context, cfg S3Config, bucket, prefix string) (*S3Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	endpoint, secure := cfg.Endpoint, cfg.UseSSL
	var creds *credentials.Credentials
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	} else {
		creds = credentials.New(&credentials.Static{Value: credentials.Value{SignerType: credentials.SignatureAnonymous}})
	}
	core, err := minio.NewCore(endpoint, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Region:       cfg.Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	ok, err := core.BucketExists(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("store: s3 bucket %q: %w", bucket, err)
	}
	if !ok {
		return nil, fmt.Errorf("store: s3 bucket %q: %w", bucket, ErrNotExist)
	}
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		prefix += "/"
	}
	return &S3Store{core: core, bucket: bucket, prefix: prefix}, nil
}

func (s *S3Store) object(key string) string { return s.prefix + key }

// mapErr turns minio errors into this package's errors.
func (s *S3Store) mapErr(op, key string, err error) error {
	if ctxErr := contextError(err); ctxErr != nil {
		return ctxErr
	}
	resp := minio.ToErrorResponse(err)
	switch {
	case resp.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s", ErrNotExist, key)
	case resp.Code == "PreconditionFailed" || resp.StatusCode == http.StatusPreconditionFailed:
		return fmt.Errorf("%w: %s", ErrExists, key)
	}
	return fmt.Errorf("store: s3 %s %s: %w", op, key, err)
}

// Put implements Store.
func (s *S3Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	opts := minio.PutObjectOptions{ContentType: contentType(key)}
	opts.SetMatchETagExcept("*") // If-None-Match: *
	cr := &countingReader{r: ctxReader{ctx: ctx, r: r}}
	var body io.Reader = cr
	if size >= 0 {
		// Never send more than declared; a short reader is caught below
		// (minio fails the request when the body ends early).
		body = io.LimitReader(cr, size)
	}
	_, err := s.core.Client.PutObject(ctx, s.bucket, s.object(key), body, size, opts)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if size >= 0 && cr.n < size {
			return fmt.Errorf("%w: put %s: read %d bytes, declared %d", ErrSizeMismatch, key, cr.n, size)
		}
		resp := minio.ToErrorResponse(err)
		if resp.StatusCode == http.StatusConflict && resp.Code == "ConditionalRequestConflict" {
			// A concurrent conditional write won the race.
			return fmt.Errorf("%w: %s", ErrExists, key)
		}
		return s.mapErr("put", key, err)
	}
	if size >= 0 {
		// The object is stored; if the reader had more bytes than declared the
		// caller's size was wrong. Remove what we wrote so nothing half-meant
		// stays behind.
		var one [1]byte
		if n, _ := cr.r.Read(one[:]); n > 0 {
			s.core.RemoveObject(context.WithoutCancel(ctx), s.bucket, s.object(key), minio.RemoveObjectOptions{})
			return fmt.Errorf("%w: put %s: reader has more than the declared %d bytes", ErrSizeMismatch, key, size)
		}
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func contentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	case strings.HasSuffix(key, ".parquet"):
		return "application/vnd.apache.parquet"
	case strings.HasSuffix(key, ".pdf"):
		return "application/pdf"
	case strings.HasSuffix(key, ".png"):
		return "image/png"
	case strings.HasSuffix(key, ".jpg"), strings.HasSuffix(key, ".jpeg"):
		return "image/jpeg"
	}
	return "application/octet-stream"
}

// Open implements Store.
func (s *S3Store) Open(ctx context.Context, key string) (Object, error) {
	info, etag, err := s.stat(ctx, key)
	if err != nil {
		return nil, err
	}
	return &s3Object{ctx: ctx, s: s, key: key, etag: etag, size: info.Size}, nil
}

// Stat implements Store.
func (s *S3Store) Stat(ctx context.Context, key string) (Info, error) {
	info, _, err := s.stat(ctx, key)
	return info, err
}

func (s *S3Store) stat(ctx context.Context, key string) (Info, string, error) {
	if err := ValidateKey(key); err != nil {
		return Info{}, "", err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, "", err
	}
	oi, err := s.core.StatObject(ctx, s.bucket, s.object(key), minio.StatObjectOptions{})
	if err != nil {
		return Info{}, "", s.mapErr("stat", key, err)
	}
	return Info{Key: key, Size: oi.Size, ModTime: oi.LastModified.UTC()}, oi.ETag, nil
}

// List implements Store.
func (s *S3Store) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := []Info{}
	for oi := range s.core.Client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{
		Prefix:    s.prefix + prefix,
		Recursive: true,
	}) {
		if oi.Err != nil {
			return nil, s.mapErr("list", prefix, oi.Err)
		}
		key := strings.TrimPrefix(oi.Key, s.prefix)
		if strings.HasSuffix(key, "/") {
			continue // directory marker, not an object
		}
		out = append(out, Info{Key: key, Size: oi.Size, ModTime: oi.LastModified.UTC()})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Delete implements Store. S3 deletes are idempotent, so the object is
// stat'ed first to report ErrNotExist; a concurrent Delete of the same key
// may therefore both succeed.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	if _, _, err := s.stat(ctx, key); err != nil {
		return err
	}
	if err := s.core.RemoveObject(ctx, s.bucket, s.object(key), minio.RemoveObjectOptions{}); err != nil {
		return s.mapErr("delete", key, err)
	}
	return nil
}

// s3Object reads an object with ranged GETs bound to the Open context.
type s3Object struct {
	ctx  context.Context
	s    *S3Store
	key  string
	etag string
	size int64
}

func (o *s3Object) Size() int64 { return o.size }

func (o *s3Object) Close() error { return nil }

func (o *s3Object) ReadAt(p []byte, off int64) (int, error) {
	if err := o.ctx.Err(); err != nil {
		return 0, err
	}
	n, short, err := readAtBounds(o.size, p, off)
	if err != nil || n == 0 {
		return 0, err
	}
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(off, off+int64(n)-1); err != nil {
		return 0, err
	}
	if o.etag != "" {
		opts.SetMatchETag(o.etag)
	}
	body, _, _, err := o.s.core.GetObject(o.ctx, o.s.bucket, o.s.object(o.key), opts)
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusPreconditionFailed {
			return 0, fmt.Errorf("store: s3 read %s: object changed since it was opened", o.key)
		}
		return 0, o.s.mapErr("read", o.key, err)
	}
	defer body.Close()
	m, err := io.ReadFull(body, p[:n])
	if err != nil {
		if ctxErr := o.ctx.Err(); ctxErr != nil {
			return m, ctxErr
		}
		return m, fmt.Errorf("store: s3 read %s at %d: %w", o.key, off, err)
	}
	if short {
		return m, io.EOF
	}
	return m, nil
}

// GetRange implements Store: a HEAD for the size and ETag, then one ranged
// GET conditional on that ETag, streamed.
func (s *S3Store) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, error) {
	info, etag, err := s.stat(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := checkRange(key, info.Size, off, length); err != nil {
		return nil, err
	}
	if length == 0 {
		return io.NopCloser(strings.NewReader("")), nil
	}
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(off, off+length-1); err != nil {
		return nil, err
	}
	if etag != "" {
		opts.SetMatchETag(etag)
	}
	body, _, _, err := s.core.GetObject(ctx, s.bucket, s.object(key), opts)
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusPreconditionFailed {
			return nil, fmt.Errorf("store: s3 read %s: object changed since it was stat'ed", key)
		}
		return nil, s.mapErr("get", key, err)
	}
	// A short body is an error, never a silently truncated file.
	return &rangeReader{ctx: ctx, r: &exactReader{r: body, left: length, key: key}, c: body}, nil
}

// exactReader fails with io.ErrUnexpectedEOF when r ends before left bytes.
type exactReader struct {
	r    io.Reader
	left int64
	key  string
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, fmt.Errorf("store: s3 read %s: %w", e.key, io.ErrUnexpectedEOF)
	}
	if err == io.EOF {
		err = nil
	}
	return n, err
}

package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"siteenv/store"
)

// TestS3ConfigValidate: NewS3Store refuses an endpoint it cannot use with
// an error naming the setting (not a panic), before any request.
func TestS3ConfigValidate(t *testing.T) {
	for _, ep := range []string{"", "http://", "https:///", "host:9000/path", "http://host/path"} {
		s, err := store.NewS3Store(context.Background(), store.S3Config{Endpoint: ep}, "bucket", "")
		if s != nil || !errors.Is(err, store.ErrInvalidURL) || !strings.Contains(err.Error(), "SITEENV_S3_ENDPOINT") {
			t.Errorf("%q: %v, %v, want ErrInvalidURL naming SITEENV_S3_ENDPOINT", ep, s, err)
		}
	}
}

// TestS3ConfigWithDefaults: the endpoint's scheme sets UseSSL and is taken
// off; without one UseSSL is kept; the other fields are kept.
func TestS3ConfigWithDefaults(t *testing.T) {
	for _, tc := range []struct {
		in, want store.S3Config
	}{
		{store.S3Config{Endpoint: "http://127.0.0.1:9000/", UseSSL: true}, store.S3Config{Endpoint: "127.0.0.1:9000"}},
		{store.S3Config{Endpoint: "HTTPS://s3.example.com"}, store.S3Config{Endpoint: "s3.example.com", UseSSL: true}},
		{store.S3Config{Endpoint: "s3.example.com", UseSSL: true, Region: "r", AccessKey: "a", SecretKey: "s"},
			store.S3Config{Endpoint: "s3.example.com", UseSSL: true, Region: "r", AccessKey: "a", SecretKey: "s"}},
		{store.S3Config{}, store.S3Config{}},
	} {
		if got := tc.in.WithDefaults(); got != tc.want {
			t.Errorf("%+v: %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

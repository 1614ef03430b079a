package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"siteenv/store"
	"siteenv/store/s3test"
	"siteenv/store/storetest"
)

// TestS3StoreConformance runs the suite against a real S3 server (versitygw)
// on 127.0.0.1; each subtest gets its own key prefix in one bucket.
func TestS3StoreConformance(t *testing.T) {
	endpoint, ak, sk, bucket := s3test.Start(t)
	if !strings.HasPrefix(endpoint, "127.0.0.1:") {
		t.Fatalf("test server must be on 127.0.0.1, got %s", endpoint)
	}
	cfg := store.S3Config{Endpoint: "http://" + endpoint, AccessKey: ak, SecretKey: sk, Region: "us-east-1"}
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		url := fmt.Sprintf("s3://%s/conformance/%d", bucket, n.Add(1))
		s, err := store.OpenStore(context.Background(), url, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestS3StoreMissingBucket(t *testing.T) {
	endpoint, ak, sk, _ := s3test.Start(t)
	cfg := store.S3Config{Endpoint: endpoint, AccessKey: ak, SecretKey: sk, Region: "us-east-1"}
	_, err := store.OpenStore(context.Background(), "s3://no-such-bucket", cfg)
	if err == nil {
		t.Fatal("OpenStore on a missing bucket succeeded")
	}
}

// Package s3test starts a real S3 server (versitygw with its posix backend)
// on 127.0.0.1 for tests. Install the server with scripts/install-test-tools.sh.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"siteenv/internal/syncbuf"
)

// Bucket is the name of the bucket Start creates.
const Bucket = "siteenv-test"

// Binary returns the path of the versitygw executable: from PATH, else from
// $GOBIN or $(go env GOPATH)/bin. The error says how to install it.
func Binary() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		gopath = build.Default.GOPATH
	}
	var dirs []string
	if gobin := os.Getenv("GOBIN"); gobin != "" {
		dirs = append(dirs, gobin)
	}
	for _, dir := range filepath.SplitList(gopath) {
		dirs = append(dirs, filepath.Join(dir, "bin"))
	}
	for _, dir := range dirs {
		p := filepath.Join(dir, "versitygw")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", errors.New("versitygw (the S3 server used by the tests) is not installed: run scripts/install-test-tools.sh")
}

// Start runs versitygw on a free port of 127.0.0.1 with the posix backend in
// a temporary directory, waits until it answers, creates Bucket, and stops
// the server when the test ends. It fails the test (never skips) if the
// server is not installed or does not start. Each call starts its own server;
// share one per test by giving subtests distinct key prefixes.
func Start(t testing.TB) (endpoint, accessKey, secretKey, bucket string) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	accessKey, secretKey = "siteenvroot", randomHex(t, 16)
	root := t.TempDir()
	dataDir := filepath.Join(root, "data")
	if err := os.Mkdir(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		endpoint = fmt.Sprintf("127.0.0.1:%d", port)
		srv, err := launch(bin, root, dataDir, endpoint, accessKey, secretKey)
		if err != nil {
			t.Fatal(err)
		}
		if err = srv.waitReady(endpoint, accessKey, secretKey); err != nil {
			srv.stop()
			lastErr = err
			continue // most likely lost the port to another process; retry
		}
		t.Cleanup(srv.stop)
		return endpoint, accessKey, secretKey, Bucket
	}
	t.Fatalf("versitygw did not start: %v", lastErr)
	return "", "", "", ""
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type server struct {
	cmd    *exec.Cmd
	output *syncBuffer
	exited chan struct{}
	once   sync.Once
}

func launch(bin, workDir, dataDir, endpoint, accessKey, secretKey string) (*server, error) {
	cmd := exec.Command(bin,
		"--access", accessKey,
		"--secret", secretKey,
		"--port", endpoint,
		"--region", "us-east-1",
		"--quiet",
		"posix", dataDir)
	cmd.Dir = workDir
	// Keep the server's own configuration out of the environment's reach.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + workDir}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	s := &server{cmd: cmd, output: out, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	return s, nil
}

func (s *server) stop() {
	s.once.Do(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		s.cmd.Process.Kill()
		<-s.exited
	})
}

// waitReady polls until the server answers S3 requests, then creates Bucket.
func (s *server) waitReady(endpoint, accessKey, secretKey string) error {
	client, err := minio.New(endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(accessKey, secretKey, ""),
		Region:       "us-east-1",
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return err
	}
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := client.ListBuckets(ctx)
		cancel()
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := client.MakeBucket(ctx, Bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
				return fmt.Errorf("create bucket: %w", err)
			}
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("versitygw exited: %s", s.output.String())
		case <-deadline.C:
			return fmt.Errorf("versitygw not answering on %s: %v; output: %s", endpoint, err, s.output.String())
		case <-tick.C:
		}
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer = syncbuf.Buffer

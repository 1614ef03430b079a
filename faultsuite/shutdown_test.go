package faultsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

var metricsRE = regexp.MustCompile(`msg="serving metrics" addr=http://([0-9.:]+)/metrics`)

// TestSIGTERMFinishesInFlightRequests runs the real binary with a metrics
// listener and a shutdown deadline. Metrics are served on their own address
// (counting the API's requests) and not on the API's. A request whose body is
// still arriving when SIGTERM lands is answered in full and its site stored,
// while new connections are refused; then the process exits cleanly.
func TestSIGTERMFinishesInFlightRequests(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	e := env{dataDir: scratchDir(t), dsn: dsn}
	l := openLedger(t, dsn)
	tn := newTenant(t, l, "Drain Pty Ltd", 0)
	s := startServer(t, e, "--metrics-addr", "127.0.0.1:0", "--shutdown-timeout", "30s")
	c := newClient(t, func() string { return s.addr })

	m := metricsRE.FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no metrics listener in the log:\n%s", s.stderr.String())
	}
	if r := c.do("GET", "/context", tn.key, nil); r.status != 200 {
		t.Fatalf("context: %d %s", r.status, r.body)
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scraped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `siteenv_http_requests_total{operation="get_context",status_class="2xx"} 1`; resp.StatusCode != 200 || !strings.Contains(string(scraped), want) {
		t.Fatalf("metrics: %d, want a line %s in:\n%.2000s", resp.StatusCode, want, scraped)
	}
	if r, err := sendTo(s.addr, rawRequest{method: "GET", target: "/metrics"}); err != nil || r.status != 404 {
		t.Fatalf("/metrics on the API address: %v %d", err, r.status)
	}

	// A request in flight: headers and half the body sent.
	body, _ := json.Marshal(map[string]any{"site": point(1), "name": "In flight"})
	conn, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	head := fmt.Sprintf("POST /api/v1/sites HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nIdempotency-Key: drain-%s\r\nContent-Length: %d\r\n\r\n",
		s.addr, tn.key, uuid.NewString(), len(body))
	half := len(body) / 2
	if _, err := conn.Write(append([]byte(head), body[:half]...)); err != nil {
		t.Fatal(err)
	}
	// SIGTERM only once the server has accepted the connection and read what
	// was sent: a connection still in the listen backlog when the listener
	// closes is dropped by the kernel, which is not an in-flight request.
	if !pollUntil(20*time.Second, 10*time.Millisecond, func() bool { return serverHasRead(s.addr, conn.LocalAddr().String()) }) {
		t.Fatal("the server never read the in-flight request's headers")
	}

	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !pollUntil(20*time.Second, 10*time.Millisecond, func() bool { return strings.Contains(s.stderr.String(), "msg=\"shutting down\"") }) {
		t.Fatalf("no shutdown after SIGTERM:\n%s", s.stderr.String())
	}
	refused := pollUntil(20*time.Second, 10*time.Millisecond, func() bool {
		nc, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err != nil {
			return true
		}
		nc.Close()
		return false
	})
	if !refused {
		t.Fatal("new connections still accepted after SIGTERM")
	}
	if !s.running() {
		t.Fatalf("the server exited with a request in flight: %v", s.err)
	}

	if _, err := conn.Write(body[half:]); err != nil {
		t.Fatal(err)
	}
	hr, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: "POST"})
	if err != nil {
		t.Fatalf("the in-flight request got no answer: %v", err)
	}
	rb, _ := io.ReadAll(hr.Body)
	hr.Body.Close()
	res := result{status: hr.StatusCode, header: hr.Header, body: rb}
	if err := validate(c.v, s.addr, rawRequest{method: "POST", target: "/api/v1/sites"}, res); err != nil {
		t.Error(err)
	}
	if res.status != 200 {
		t.Fatalf("in-flight request: %d %s", res.status, res.body)
	}
	id, err := uuid.Parse(res.json(t)["site"].(map[string]any)["site_id"].(string))
	if err != nil {
		t.Fatal(err)
	}

	select {
	case <-s.exited:
	case <-time.After(90 * time.Second):
		t.Fatal("siteenv serve did not exit after SIGTERM")
	}
	if s.err != nil {
		t.Fatalf("siteenv serve exited with %v after SIGTERM", s.err)
	}
	if _, err := l.Site(context.Background(), tn.account, id); err != nil {
		t.Fatalf("the site answered during shutdown is not stored: %v", err)
	}
}

// serverHasRead reports whether the server's socket of the connection from
// client (host:port) to server exists and holds no unread bytes, from
// /proc/net/tcp (loopback IPv4): the server accepted it and read what came.
func serverHasRead(server, client string) bool {
	_, sp, _ := net.SplitHostPort(server)
	_, cp, _ := net.SplitHostPort(client)
	spn, _ := strconv.Atoi(sp)
	cpn, _ := strconv.Atoi(cp)
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return false
	}
	local, remote := fmt.Sprintf(":%04X", spn), fmt.Sprintf(":%04X", cpn)
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasSuffix(f[1], local) || !strings.HasSuffix(f[2], remote) {
			continue
		}
		// f[4] is tx_queue:rx_queue in hex.
		q := strings.SplitN(f[4], ":", 2)
		return len(q) == 2 && strings.Trim(q[1], "0") == ""
	}
	return false
}

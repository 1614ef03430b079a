package ledger

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// AdmitAnsweredPipelinedForTest sends the answered admissions ars in one
// round trip on one connection, each its own implicit transaction (a Sync
// after each, so one refused does not abort the others), and returns each
// one's error: BenchmarkAdmitGroup measures with it whether admissions
// sharing a round trip (group commit) would raise throughput. It reads
// no result beyond its errors and settles no lease: a measurement, not
// an Admit.
func AdmitAnsweredPipelinedForTest(ctx context.Context, l *Ledger, ars []AdmitRequest) ([]error, error) {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	sd, err := conn.Conn().Prepare(ctx, "test_admit_answered", admitAnsweredSQL)
	if err != nil {
		return nil, err
	}
	pl := conn.Conn().PgConn().StartPipeline(ctx)
	var eqb pgx.ExtendedQueryBuilder
	for _, ar := range ars {
		c, err := l.answeredCall(ctx, ar)
		if err != nil {
			pl.Close()
			return nil, err
		}
		if err := eqb.Build(conn.Conn().TypeMap(), sd, c.args); err != nil {
			pl.Close()
			return nil, err
		}
		pl.SendQueryPrepared(sd.Name, eqb.ParamValues, eqb.ParamFormats, eqb.ResultFormats)
		pl.SendPipelineSync()
	}
	if err := pl.Flush(); err != nil {
		pl.Close()
		return nil, err
	}
	errs := make([]error, len(ars))
	for i := range ars {
		res, err := pl.GetResults()
		if rr, ok := res.(*pgconn.ResultReader); ok && err == nil {
			_, err = rr.Close()
		}
		errs[i] = err
		if res, err = pl.GetResults(); err != nil {
			pl.Close()
			return nil, err
		} else if _, ok := res.(*pgconn.PipelineSync); !ok {
			pl.Close()
			return nil, fmt.Errorf("ledger: pipeline: %T where a sync was due", res)
		}
	}
	return errs, pl.Close()
}

// ServerCPUForTest is the CPU (user and system) used so far by the
// cluster's processes alive now (pg_stat_activity's pids, from
// /proc/PID/stat in clock ticks of 10 ms): BenchmarkAdmitGroup's server
// CPU per admission, over a pool whose connections stay open.
func ServerCPUForTest(ctx context.Context, l *Ledger) (time.Duration, error) {
	rows, err := l.pool.Query(ctx, `SELECT pid FROM pg_stat_activity`)
	if err != nil {
		return 0, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		for _, s := range f[11:13] {
			v, _ := strconv.ParseInt(s, 10, 64)
			total += time.Duration(v) * 10 * time.Millisecond
		}
	}
	return total, nil
}

package ledger

import (
	"context"
	"fmt"

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

package bench

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// With --ledger-statements the ledger's PostgreSQL runs with
// log_statement_stats on: after every protocol message (parse, bind,
// execute; a simple query) each backend logs the CPU it took (getrusage),
// with the statement. Summed by statement over a pass, that says which of
// the ledger's statements its CPU a query goes to, the whole admission
// (siteenv_admit_answered is one statement) against its fallbacks, reads
// and background work. The logging costs CPU of its own (a few
// microseconds a message, and the log's writes), so such a run's CPU and
// queries/s are not the bench's figures.

// statementCPU is one statement's share of a pass: its parse, bind and
// execute messages (or simple queries) summed.
type statementCPU struct {
	// SQL is the statement's first statementHead bytes, whitespace
	// collapsed.
	SQL string
	// Calls are its executions (execute messages and simple queries).
	Calls int
	CPU   time.Duration
}

const statementHead = 90

var (
	statsLine = regexp.MustCompile(`\[\d+\] LOG:  (PARSE MESSAGE|BIND MESSAGE|EXECUTE MESSAGE|QUERY) STATISTICS$`)
	usageLine = regexp.MustCompile(`^\s*!\s*([0-9.]+) s user, ([0-9.]+) s system`)
	stmtLine  = regexp.MustCompile(`\[\d+\] STATEMENT:  (.*)$`)
	// anyLine is any line a message begins with (log_line_prefix '%m [%p] ').
	anyLine = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[\d+\] [A-Z]+:  `)
)

// parseStatementStats sums the statistics messages of r, a PostgreSQL
// log, by statement, most CPU first. A backend's message is one write, so
// its lines are together; a message cut short (the log read while it was
// written) is left out.
func parseStatementStats(r io.Reader) ([]statementCPU, error) {
	type pending struct {
		cpu         time.Duration
		exec, timed bool // an execution (not a parse or bind); its usage read
	}
	var (
		by   = map[string]*statementCPU{}
		cur  *pending
		stmt *strings.Builder
		add  = func(p *pending, sql string) {
			sql = strings.Join(strings.Fields(sql), " ")
			if len(sql) > statementHead {
				sql = sql[:statementHead]
			}
			s := by[sql]
			if s == nil {
				s = &statementCPU{SQL: sql}
				by[sql] = s
			}
			s.CPU += p.cpu
			if p.exec {
				s.Calls++
			}
		}
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if stmt != nil {
			if !anyLine.MatchString(line) {
				// The statement's next line (its text had a newline).
				if stmt.Len() < 4*statementHead {
					stmt.WriteString(" " + line)
				}
				continue
			}
			add(cur, stmt.String())
			cur, stmt = nil, nil
		}
		if m := statsLine.FindStringSubmatch(line); m != nil {
			cur = &pending{exec: m[1] == "EXECUTE MESSAGE" || m[1] == "QUERY"}
			continue
		}
		if cur == nil {
			continue
		}
		if m := usageLine.FindStringSubmatch(line); m != nil && !cur.timed {
			u, err1 := strconv.ParseFloat(m[1], 64)
			s, err2 := strconv.ParseFloat(m[2], 64)
			if err1 != nil || err2 != nil {
				cur = nil
				continue
			}
			cur.cpu, cur.timed = time.Duration((u+s)*float64(time.Second)), true
			continue
		}
		if m := stmtLine.FindStringSubmatch(line); m != nil && cur.timed {
			stmt = &strings.Builder{}
			stmt.WriteString(m[1])
			continue
		}
		if anyLine.MatchString(line) && !strings.Contains(line, "DETAIL:  ! system usage stats:") {
			cur = nil // another message began before this one's statement
		}
	}
	if stmt != nil {
		add(cur, stmt.String())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("bench: ledger log: %w", err)
	}
	out := make([]statementCPU, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b statementCPU) int {
		return cmp.Or(cmp.Compare(b.CPU, a.CPU), strings.Compare(a.SQL, b.SQL))
	})
	return out, nil
}

// logSize is the ledger's log's size now: where a pass's messages begin.
func (a *apiSide) logSize() int64 {
	if !a.statements {
		return 0
	}
	fi, err := os.Stat(a.cluster.LogFile())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// statementsSince sums the ledger's statistics messages logged from
// offset on (nil without --ledger-statements).
func (a *apiSide) statementsSince(offset int64) ([]statementCPU, error) {
	if !a.statements {
		return nil, nil
	}
	f, err := os.Open(a.cluster.LogFile())
	if err != nil {
		return nil, fmt.Errorf("bench: ledger log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, fmt.Errorf("bench: ledger log: %w", err)
	}
	return parseStatementStats(f)
}

// printStatements writes a pass's most costly statements, per query of
// the pass, and the rest as one line.
func printStatements(w io.Writer, ss []statementCPU, queries int) {
	if len(ss) == 0 {
		return
	}
	q := float64(max(queries, 1))
	var total time.Duration
	for _, s := range ss {
		total += s.CPU
	}
	fmt.Fprintf(w, "  ledger CPU by statement (log_statement_stats: parse, bind and execute; its logging inflates this run's CPU): %.3f ms a query in all\n", ms(total)/q)
	const shown = 8
	var rest time.Duration
	for i, s := range ss {
		if i >= shown {
			rest += s.CPU
			continue
		}
		per := "-"
		if s.Calls > 0 {
			per = fmt.Sprintf("%.3f ms", ms(s.CPU)/float64(s.Calls))
		}
		fmt.Fprintf(w, "    %.3f ms a query: %.2f calls a query, %s a call: %s\n", ms(s.CPU)/q, float64(s.Calls)/q, per, s.SQL)
	}
	if rest > 0 {
		fmt.Fprintf(w, "    %.3f ms a query: %d other statements\n", ms(rest)/q, len(ss)-shown)
	}
}

package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// parseTime reads an RFC 3339 time with a timezone, or a date (UTC midnight).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Parse(time.DateOnly, s)
}

// admin runs `siteenv admin <noun> <verb> [flags]`.
func admin(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return usageError{"admin needs a noun and a verb, e.g. `admin account create`"}
	}
	cmd := args[0] + " " + args[1]
	fs := flag.NewFlagSet("admin "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs, set)
	var op func(context.Context, *ledger.Ledger) (any, error)
	// envOp is an op that also needs the store (and engine).
	var envOp func(context.Context, *env) (any, error)
	rest := args[2:]

	switch cmd {
	case "account create":
		name := fs.String("name", "", "account name (required)")
		credits := fs.Int64("credits", 0, "opening credit balance")
		op = func(ctx context.Context, l *ledger.Ledger) (any, error) {
			if *name == "" {
				return nil, usageError{"--name is required"}
			}
			a, err := l.CreateAccount(ctx, *name, *credits)
			return map[string]any{"account_id": a.ID}, err
		}
	case "credits grant":
		account := fs.String("account", "", "account id (required)")
		amount := fs.Int64("amount", 0, "credits to add (> 0)")
		op = func(ctx context.Context, l *ledger.Ledger) (any, error) {
			id, err := parseID("--account", *account)
			if err != nil {
				return nil, err
			}
			bal, err := l.GrantCredits(ctx, id, *amount)
			return map[string]any{"account_id": id, "credit_balance": bal}, err
		}
	case "key create":
		account := fs.String("account", "", "account id (required)")
		scopes := fs.String("scopes", "", "comma-separated scopes, or all (required)")
		datasets := fs.String("datasets", "all", "comma-separated layer ids, all, or none")
		spend := fs.String("spend-limit", "", "total spending cap of a new integration (default 100000)")
		principal := fs.String("principal", "machine", "machine or human")
		integration := fs.String("integration", "", "attach the key to this existing integration")
		op = func(ctx context.Context, l *ledger.Ledger) (any, error) {
			p := ledger.KeyParams{Principal: *principal}
			var err error
			if p.Account, err = parseID("--account", *account); err != nil {
				return nil, err
			}
			switch *scopes {
			case "":
				return nil, usageError{"--scopes is required (comma-separated, or all)"}
			case "all":
				p.Scopes = ledger.Scopes
			default:
				p.Scopes = splitList(*scopes)
			}
			switch *datasets {
			case "all":
			case "none":
				p.Datasets = []string{}
			default:
				p.Datasets = splitList(*datasets)
				// A typo would make a key that can never read the layer
				// meant: every id must name a layer of the catalogue.
				var unknown []string
				for _, id := range p.Datasets {
					if _, err := l.Layer(ctx, id); errors.Is(err, ledger.ErrNotFound) {
						unknown = append(unknown, id)
					} else if err != nil {
						return nil, err
					}
				}
				if len(unknown) > 0 {
					return nil, usageError{fmt.Sprintf("--datasets: no layer %s in the catalogue (ingest it first, or see GET /layers)", strings.Join(unknown, ", "))}
				}
			}
			if *spend != "" {
				n, err := strconv.ParseInt(*spend, 10, 64)
				if err != nil || n < 0 {
					return nil, usageError{"--spend-limit must be an integer >= 0"}
				}
				p.SpendLimit = &n
			}
			if *integration != "" {
				id, err := parseID("--integration", *integration)
				if err != nil {
					return nil, err
				}
				p.Integration = &id
			}
			k, err := l.CreateKey(ctx, p)
			if err != nil {
				return nil, err
			}
			return map[string]any{"key": k.Secret, "key_id": k.KeyID, "integration_id": k.IntegrationID}, nil
		}
	case "key revoke":
		keyID := fs.String("key-id", "", "key id (required)")
		op = func(ctx context.Context, l *ledger.Ledger) (any, error) {
			id, err := parseID("--key-id", *keyID)
			if err != nil {
				return nil, err
			}
			return map[string]any{"key_id": id, "revoked": true}, l.RevokeKey(ctx, id)
		}
	case "section set":
		key := fs.String("key", "", "section key (required)")
		name := fs.String("name", "", "display name (required)")
		price := fs.Int64("price", -1, "price in credits (0 = free section)")
		op = func(ctx context.Context, l *ledger.Ledger) (any, error) {
			if *key == "" || *name == "" || *price < 0 {
				return nil, usageError{"--key, --name and --price (>= 0) are required"}
			}
			if !sectionKeyRE.MatchString(*key) {
				return nil, usageError{"--key must match ^[a-z0-9][a-z0-9_-]*$ (1..100 characters)"}
			}
			return map[string]any{"section_key": *key, "name": *name, "price": *price}, l.SetSection(ctx, *key, *name, *price)
		}
	case "config set":
		if len(rest) < 2 {
			return usageError{"usage: admin config set report-price N"}
		}
		name, raw := rest[0], rest[1]
		rest = rest[2:]
		op = func(ctx context.Context, l *ledger.Ledger) (any, error) {
			n, err := strconv.ParseInt(raw, 10, 64)
			if err != nil {
				return nil, usageError{name + " must be an integer"}
			}
			return map[string]any{"name": name, "value": n}, l.SetSetting(ctx, name, n)
		}
	case "portfolio create":
		account := fs.String("account", "", "account id (required)")
		name := fs.String("name", "", "portfolio name (required)")
		op = func(ctx context.Context, l *ledger.Ledger) (any, error) {
			id, err := parseID("--account", *account)
			if err != nil {
				return nil, err
			}
			if *name == "" {
				return nil, usageError{"--name is required"}
			}
			p, err := l.CreatePortfolio(ctx, id, *name)
			return map[string]any{"portfolio_id": p.ID}, err
		}
	case "legacy import":
		if len(rest) < 1 || strings.HasPrefix(rest[0], "-") {
			return usageError{"usage: admin legacy import FILE (CSV: legacy_id,account_id,credits,created_at,site_id)"}
		}
		path := rest[0]
		rest = rest[1:]
		op = func(ctx context.Context, l *ledger.Ledger) (any, error) {
			entries, err := readLegacyCSV(path)
			if err != nil {
				return nil, err
			}
			n, err := l.ImportLegacy(ctx, entries)
			return map[string]any{"imported": n, "already_present": len(entries) - n}, err
		}
	case "report revise":
		reportID := fs.String("report", "", "report id (required)")
		envOp = func(ctx context.Context, e *env) (any, error) {
			id, err := parseID("--report", *reportID)
			if err != nil {
				return nil, err
			}
			return reviseReport(ctx, e, id)
		}
	case "report import":
		account := fs.String("account", "", "account id (required)")
		site := fs.String("site", "", "site id (required; the account's, archived or not)")
		file := fs.String("file", "", "the report PDF (required)")
		createdAt := fs.String("created-at", "", "when the website created it: RFC 3339 or YYYY-MM-DD (default now)")
		envOp = func(ctx context.Context, e *env) (any, error) {
			acct, err := parseID("--account", *account)
			if err != nil {
				return nil, err
			}
			siteID, err := parseID("--site", *site)
			if err != nil {
				return nil, err
			}
			if *file == "" {
				return nil, usageError{"--file is required"}
			}
			created := e.led.Clock().Now()
			if *createdAt != "" {
				if created, err = parseTime(*createdAt); err != nil {
					return nil, usageError{"--created-at must be RFC 3339 with a timezone, or YYYY-MM-DD (UTC)"}
				}
			}
			return importReport(ctx, e, acct, siteID, *file, created)
		}
	case "ledger check":
		op = func(ctx context.Context, l *ledger.Ledger) (any, error) {
			v, err := l.Check(ctx)
			if err != nil {
				return nil, err
			}
			if len(v) > 0 {
				b, _ := json.Marshal(v)
				return nil, fmt.Errorf("ledger invariants broken: %s", b)
			}
			return map[string]any{"ok": true, "violations": []any{}}, nil
		}
	default:
		fmt.Fprint(stderr, usage)
		return usageError{fmt.Sprintf("unknown admin command %q", cmd)}
	}
	if err := fs.Parse(rest); err != nil {
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	e, err := openEnv(ctx, set, *dataDir, set.logger(io.Discard))
	if err != nil {
		return err
	}
	defer e.close()
	var out any
	if envOp != nil {
		out, err = envOp(ctx, e)
	} else {
		out, err = op(ctx, e.led)
	}
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			return fmt.Errorf("%s: not found", cmd)
		}
		return err
	}
	enc := json.NewEncoder(stdout)
	return enc.Encode(out)
}

func parseID(flagName, s string) (uuid.UUID, error) {
	if s == "" {
		return uuid.Nil, usageError{flagName + " is required"}
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, usageError{flagName + " must be a UUID"}
	}
	return id, nil
}

func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var sectionKeyRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,99}$`)

// readLegacyCSV reads legacy usage transactions: a header row, then
// legacy_id,account_id,credits,created_at (RFC 3339 or empty),site_id (or empty).
func readLegacyCSV(path string) ([]ledger.LegacyUsage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := csv.NewReader(f)
	rd.FieldsPerRecord = 5
	head, err := rd.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if strings.Join(head, ",") != "legacy_id,account_id,credits,created_at,site_id" {
		return nil, fmt.Errorf("%s: header must be legacy_id,account_id,credits,created_at,site_id", path)
	}
	var out []ledger.LegacyUsage
	for line := 2; ; line++ {
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		e := ledger.LegacyUsage{LegacyID: rec[0]}
		if e.AccountID, err = uuid.Parse(rec[1]); err != nil {
			return nil, fmt.Errorf("%s:%d: account_id is not a UUID", path, line)
		}
		if e.Credits, err = strconv.ParseInt(rec[2], 10, 64); err != nil || e.Credits < 0 {
			return nil, fmt.Errorf("%s:%d: credits must be an integer >= 0", path, line)
		}
		if rec[3] != "" {
			t, err := time.Parse(time.RFC3339, rec[3])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: created_at must be RFC 3339 with a timezone, or empty", path, line)
			}
			e.CreatedAt = &t
		}
		if rec[4] != "" {
			id, err := uuid.Parse(rec[4])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: site_id is not a UUID", path, line)
			}
			e.SiteID = &id
		}
		out = append(out, e)
	}
}

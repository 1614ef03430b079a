package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"siteenv/ledger"
)

// admin runs `siteenv admin <noun> <verb> [flags]`.
func admin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return usageError{"admin needs a noun and a verb, e.g. `admin account create`"}
	}
	cmd := args[0] + " " + args[1]
	fs := flag.NewFlagSet("admin "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs)
	var op func(context.Context, *ledger.Ledger) (any, error)
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
	e, err := openEnv(ctx, *dataDir, newLogger(io.Discard))
	if err != nil {
		return err
	}
	defer e.close()
	out, err := op(ctx, e.led)
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

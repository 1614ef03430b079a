package ledger

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"
)

// AddressRow is one address point of the gazetteer (CRS84).
type AddressRow struct {
	Label, Number, Street, Locality, State, Postcode string
	Lon, Lat                                         float64
	// LGA is the locality's local government area; "" when not held.
	LGA string
}

// ParcelRow is one cadastral parcel: its geometry as GeoJSON and its bounds.
type ParcelRow struct {
	Jurisdiction, CadastreID string
	Address                  *string
	Geometry                 json.RawMessage
	MinLon, MinLat           float64
	MaxLon, MaxLat           float64
}

const (
	truncateGazetteerSQL = `TRUNCATE addresses, parcels`
	analyzeGazetteerSQL  = `ANALYZE addresses, parcels`
)

// ReplaceGazetteer swaps the whole gazetteer for the rows the two iterators
// give, in one transaction: searches see the old one or the new one, never a
// mix. next returns false when done; a non-nil error aborts and keeps the old.
func (l *Ledger) ReplaceGazetteer(ctx context.Context, nextAddress func() (AddressRow, bool, error), nextParcel func() (ParcelRow, bool, error)) (addresses, parcels int64, err error) {
	err = l.tx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, truncateGazetteerSQL); err != nil {
			return err
		}
		var err error
		addresses, err = tx.CopyFrom(ctx, pgx.Identifier{"addresses"},
			[]string{"label", "number", "street", "locality", "state", "postcode", "longitude", "latitude", "lga"},
			pgx.CopyFromFunc(func() ([]any, error) {
				a, ok, err := nextAddress()
				if err != nil || !ok {
					return nil, err
				}
				return []any{a.Label, a.Number, a.Street, a.Locality, a.State, a.Postcode, a.Lon, a.Lat, nullable(a.LGA)}, nil
			}))
		if err != nil {
			return err
		}
		parcels, err = tx.CopyFrom(ctx, pgx.Identifier{"parcels"},
			[]string{"jurisdiction", "cadastre_id", "address", "geometry", "min_lon", "min_lat", "max_lon", "max_lat"},
			pgx.CopyFromFunc(func() ([]any, error) {
				p, ok, err := nextParcel()
				if err != nil || !ok {
					return nil, err
				}
				return []any{p.Jurisdiction, p.CadastreID, p.Address, string(p.Geometry), p.MinLon, p.MinLat, p.MaxLon, p.MaxLat}, nil
			}))
		return err
	})
	if err == nil {
		// Fresh statistics keep the search plans good after a wholesale reload.
		_, err = l.pool.Exec(ctx, analyzeGazetteerSQL)
	}
	return addresses, parcels, translate(err)
}

// nullable stores "" as NULL.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

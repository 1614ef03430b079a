package ledger

import (
	"context"
	"encoding/json"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Address is one address point of the gazetteer (CRS84).
type Address struct {
	// ID is the opaque address identifier: "adr_" and the MD5 of the label in
	// hex, stable across wholesale reloads of the gazetteer.
	ID                                               string
	Label, Number, Street, Locality, State, Postcode string
	Lon, Lat                                         float64
}

// AddressMatch is an address found by SearchAddresses with its score
// (higher is better; about 0..1.25).
type AddressMatch struct {
	Address
	Score float64
}

// Parcel is one cadastral parcel of the gazetteer.
type Parcel struct {
	Jurisdiction, CadastreID string
	// Address is the label of the parcel's address, if it has one, and
	// Postcode that address's postcode.
	Address, Postcode *string
	// LGA is that address's local government area, nil if not held.
	LGA *string
	// Geometry is a GeoJSON Polygon or MultiPolygon in CRS84.
	Geometry json.RawMessage
	// Bounds [min lon, min lat, max lon, max lat].
	Bounds [4]float64
}

// ParcelMatch is a parcel found by SearchParcels with its score (higher is
// better).
type ParcelMatch struct {
	Parcel
	Score float64
}

// AddressQuery is a free-text address search.
type AddressQuery struct {
	// Text as the user typed it, e.g. "12 smth st parramata".
	Text string
	// Jurisdiction and Postcode narrow the search; "" means any.
	Jurisdiction, Postcode string
	// Limit is the number of matches wanted, at least 1.
	Limit int
}

// ParcelQuery is a free-text parcel search: by cadastre identifier and by
// the address of the parcel.
type ParcelQuery struct {
	Text         string
	Jurisdiction string // "" any
	Limit        int    // at least 1
}

// Search tuning. wordSimilarityThreshold is pg_trgm's word_similarity a
// street must reach (typos cost about 0.05 to 0.1 each); streetCandidates is
// how many of the best streets the second stage ranks addresses on.
const (
	wordSimilarityThreshold = 0.5
	// cadastreSimilarityThreshold is the word similarity a cadastre
	// identifier must reach.
	cadastreSimilarityThreshold = 0.7
	streetCandidates            = 30
	// Bonus of an address whose house number is the one asked for, and of
	// one with the same digits (12 for 12A).
	exactNumberBonus = 0.25
	digitsBonus      = 0.15
	maxParcelsAt     = 1000
)

// leadingNumber splits a leading house number off an address query: "12",
// "12a", "3/12" (unit 3 of number 12), "12-14" (a range: 12), optionally
// after "unit", "flat", "apt" or "shop".
var leadingNumber = regexp.MustCompile(`^\s*(?:(?:unit|u|flat|apt|shop)\s*)?(?:[0-9]+[a-z]?\s*/\s*)?([0-9]+)([a-z]?)(?:\s*-\s*[0-9]+[a-z]?)?(?:[^a-z0-9/]|$)`)

// splitHouseNumber returns the house number a query starts with (lower
// case, e.g. "12a"; "" if none), its digits, and the rest of the query.
// A query that is nothing but a number is searched as text ("2150" is
// more likely a postcode).
func splitHouseNumber(text string) (number, digits, rest string) {
	t := strings.ToLower(text)
	m := leadingNumber.FindStringSubmatchIndex(t)
	if m == nil {
		return "", "", t
	}
	rest = t[m[1]:]
	if !hasAlnum(rest) {
		return "", "", t
	}
	return t[m[2]:m[3]] + t[m[4]:m[5]], t[m[2]:m[3]], rest
}

func hasAlnum(s string) bool {
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c > 127 {
			return true
		}
	}
	return false
}

// searchAddressesSQL: stage one ranks streets (street, locality, state,
// postcode) by trigram word similarity to the query less its house number;
// stage two takes, per candidate street, its addresses with the asked house
// number first; the final order adds the house-number bonus to the street's
// score. One row more than the limit tells whether more results exist.
const searchAddressesSQL = `
WITH q AS (SELECT gazetteer_normalise($1::text) AS t),
s AS (
    SELECT st.street, st.locality, st.state, st.postcode,
           word_similarity(q.t, st.search) AS ws, similarity(q.t, st.search) AS sim
    FROM address_streets st, q
    WHERE q.t <% st.search
      AND ($2::text = '' OR st.state = $2::text)
      AND ($3::text = '' OR st.postcode = $3::text)
    ORDER BY ws DESC, sim DESC, st.search
    LIMIT $6)
SELECT 'adr_' || md5(a.label), a.label, a.number, a.street, a.locality, a.state, a.postcode, a.longitude, a.latitude,
       s.ws + a.bonus AS score
FROM s CROSS JOIN LATERAL (
    SELECT x.*, length(x.digits) AS dlen FROM (
        SELECT a.*, rtrim(lower(a.number), 'abcdefghijklmnopqrstuvwxyz') AS digits,
               CASE WHEN $4::text = '' THEN 0
                    WHEN lower(a.number) = $4::text THEN $8::float8
                    WHEN rtrim(lower(a.number), 'abcdefghijklmnopqrstuvwxyz') = $5::text THEN $9::float8
                    ELSE 0 END AS bonus
        FROM addresses a
        WHERE (a.street, a.locality, a.state, a.postcode) = (s.street, s.locality, s.state, s.postcode)) x
    ORDER BY x.bonus DESC, length(x.digits), x.digits, x.number, x.label
    LIMIT $7) a
ORDER BY score DESC, s.sim DESC, a.dlen, a.digits, a.number, a.label
LIMIT $7`

// SearchAddresses finds up to q.Limit addresses for free text, best first,
// tolerating typos and abbreviations (see gazetteer_normalise in migration
// 0004), and reports whether more matched. Nothing is written.
func (l *Ledger) SearchAddresses(ctx context.Context, q AddressQuery) ([]AddressMatch, bool, error) {
	var out []AddressMatch
	err := l.searchTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = searchAddresses(ctx, tx, q)
		return err
	})
	if err != nil {
		return nil, false, translate(err)
	}
	more := len(out) > q.Limit
	if more {
		out = out[:q.Limit]
	}
	return out, more, nil
}

const searchSettingsSQL = `SELECT set_config('pg_trgm.word_similarity_threshold', $1, true), set_config('enable_seqscan', 'off', true)`

// searchTx runs fn in a read-only transaction with the search's trigram
// threshold.
func (l *Ledger) searchTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, l.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The planner underestimates trigram comparisons: scanning every
		// street can look cheaper than the index, and is 10 to 50 times slower.
		if _, err := tx.Exec(ctx, searchSettingsSQL,
			strconv.FormatFloat(wordSimilarityThreshold, 'f', -1, 64)); err != nil {
			return err
		}
		return fn(tx)
	})
}

// searchAddresses returns up to q.Limit+1 matches.
func searchAddresses(ctx context.Context, tx pgx.Tx, q AddressQuery) ([]AddressMatch, error) {
	number, digits, rest := splitHouseNumber(q.Text)
	if !hasAlnum(rest) || q.Limit < 1 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, searchAddressesSQL, rest, q.Jurisdiction, q.Postcode, number, digits, streetCandidates, q.Limit+1, exactNumberBonus, digitsBonus)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (AddressMatch, error) {
		var m AddressMatch
		err := row.Scan(&m.ID, &m.Label, &m.Number, &m.Street, &m.Locality, &m.State, &m.Postcode, &m.Lon, &m.Lat, &m.Score)
		return m, err
	})
}

const parcelColumns = `p.jurisdiction, p.cadastre_id, p.address, a.postcode, a.lga, p.geometry, p.min_lon, p.min_lat, p.max_lon, p.max_lat`

// parcelFrom joins a parcel's address for its postcode and LGA.
const parcelFrom = ` FROM parcels p LEFT JOIN addresses a ON a.label = p.address `

func scanParcel(row pgx.CollectableRow) (Parcel, error) {
	var p Parcel
	err := row.Scan(&p.Jurisdiction, &p.CadastreID, &p.Address, &p.Postcode, &p.LGA, &p.Geometry, &p.Bounds[0], &p.Bounds[1], &p.Bounds[2], &p.Bounds[3])
	return p, err
}

const (
	parcelsByCadastrePrefixSQL = `SELECT ` + parcelColumns + `,
					CASE WHEN upper(p.cadastre_id) = upper($1::text) THEN 2 ELSE 1.5 END AS score` + parcelFrom + `
				WHERE upper(p.cadastre_id) LIKE upper($2::text) || '%' AND ($3::text = '' OR p.jurisdiction = $3::text)
				ORDER BY score DESC, length(p.cadastre_id), p.cadastre_id, p.jurisdiction
				LIMIT $4`
	setSimilarityThresholdSQL      = `SELECT set_config('pg_trgm.word_similarity_threshold', $1, true)`
	parcelsByCadastreSimilaritySQL = `SELECT ` + parcelColumns + `, word_similarity($1::text, p.cadastre_id) AS score` + parcelFrom + `
				WHERE $1::text <% p.cadastre_id AND ($2::text = '' OR p.jurisdiction = $2::text)
				ORDER BY score DESC, similarity($1::text, p.cadastre_id) DESC, p.jurisdiction, p.cadastre_id
				LIMIT $3`
	parcelsOfAddressesSQL = `SELECT ` + parcelColumns + `, 0::float8` + parcelFrom + `
			WHERE p.address = ANY ($1) AND ($2::text = '' OR p.jurisdiction = $2::text)`
)

// SearchParcels finds up to q.Limit parcels, best first, and reports
// whether more matched. Three ways, the best score of a parcel counting:
// the cadastre identifier equal to the query (score 2) or starting with it
// (1.5; "12/DP3456" finds "12/DP34567"), similar to it by trigrams (up to 1:
// typos), and the address search on the parcel's address.
func (l *Ledger) SearchParcels(ctx context.Context, q ParcelQuery) ([]ParcelMatch, bool, error) {
	best := map[[2]string]ParcelMatch{}
	keep := func(ms []ParcelMatch) {
		for _, m := range ms {
			k := [2]string{m.Jurisdiction, m.CadastreID}
			if old, ok := best[k]; !ok || m.Score > old.Score {
				best[k] = m
			}
		}
	}
	scan := func(row pgx.CollectableRow) (ParcelMatch, error) {
		var m ParcelMatch
		err := row.Scan(&m.Jurisdiction, &m.CadastreID, &m.Address, &m.Postcode, &m.LGA, &m.Geometry,
			&m.Bounds[0], &m.Bounds[1], &m.Bounds[2], &m.Bounds[3], &m.Score)
		return m, err
	}
	text := strings.TrimSpace(q.Text)
	err := l.searchTx(ctx, func(tx pgx.Tx) error {
		// Identifiers have digits; anything else is only an address.
		if strings.ContainsAny(text, "0123456789") {
			rows, err := tx.Query(ctx, parcelsByCadastrePrefixSQL, text, escapeLike(text), q.Jurisdiction, q.Limit+1)
			if err != nil {
				return err
			}
			found, err := pgx.CollectRows(rows, scan)
			if err != nil {
				return err
			}
			keep(found)
			// Identifiers of one survey differ in a digit or two: a stricter
			// threshold than for street names keeps the candidates few.
			if _, err := tx.Exec(ctx, setSimilarityThresholdSQL,
				strconv.FormatFloat(cadastreSimilarityThreshold, 'f', -1, 64)); err != nil {
				return err
			}
			rows, err = tx.Query(ctx, parcelsByCadastreSimilaritySQL, text, q.Jurisdiction, q.Limit+1)
			if err != nil {
				return err
			}
			if found, err = pgx.CollectRows(rows, scan); err != nil {
				return err
			}
			keep(found)
			if _, err := tx.Exec(ctx, setSimilarityThresholdSQL,
				strconv.FormatFloat(wordSimilarityThreshold, 'f', -1, 64)); err != nil {
				return err
			}
		}
		addrs, err := searchAddresses(ctx, tx, AddressQuery{Text: q.Text, Jurisdiction: q.Jurisdiction, Limit: q.Limit})
		if err != nil || len(addrs) == 0 {
			return err
		}
		score := map[string]float64{}
		labels := make([]string, len(addrs))
		for i, a := range addrs {
			labels[i], score[a.Label] = a.Label, a.Score
		}
		rows, err := tx.Query(ctx, parcelsOfAddressesSQL, labels, q.Jurisdiction)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, scan)
		if err != nil {
			return err
		}
		for i := range found {
			found[i].Score = score[*found[i].Address]
		}
		keep(found)
		return nil
	})
	if err != nil {
		return nil, false, translate(err)
	}
	out := make([]ParcelMatch, 0, len(best))
	for _, m := range best {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Score != b.Score:
			return a.Score > b.Score
		case len(a.CadastreID) != len(b.CadastreID):
			return len(a.CadastreID) < len(b.CadastreID)
		case a.CadastreID != b.CadastreID:
			return a.CadastreID < b.CadastreID
		}
		return a.Jurisdiction < b.Jurisdiction
	})
	more := len(out) > q.Limit
	if more {
		out = out[:q.Limit]
	}
	return out, more, nil
}

const addressByIDSQL = `SELECT 'adr_' || md5(label), label, number, street, locality, state, postcode, longitude, latitude
		FROM addresses WHERE md5(label) = $1 ORDER BY label LIMIT 1`

// AddressByID reads the address an address identifier names; an unknown or
// malformed identifier is ErrNotFound.
func (l *Ledger) AddressByID(ctx context.Context, id string) (Address, error) {
	hash, ok := strings.CutPrefix(id, "adr_")
	if !ok || !isLowerHex(hash, 32) {
		return Address{}, ErrNotFound
	}
	var a Address
	err := l.pool.QueryRow(ctx, addressByIDSQL, hash).
		Scan(&a.ID, &a.Label, &a.Number, &a.Street, &a.Locality, &a.State, &a.Postcode, &a.Lon, &a.Lat)
	return a, translate(err)
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

const parcelsByIDSQL = `SELECT ` + parcelColumns + parcelFrom + `WHERE p.jurisdiction = $1 AND p.cadastre_id = ANY ($2)`

// ParcelsByID reads the listed parcels of a jurisdiction that exist, in no
// particular order.
func (l *Ledger) ParcelsByID(ctx context.Context, jurisdiction string, ids []string) ([]Parcel, error) {
	rows, err := l.pool.Query(ctx, parcelsByIDSQL, jurisdiction, ids)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, scanParcel)
	return out, translate(err)
}

const parcelsAtSQL = `SELECT ` + parcelColumns + parcelFrom + `
		WHERE box(point(p.min_lon, p.min_lat), point(p.max_lon, p.max_lat)) && box(point($1::float8, $2::float8), point($1::float8, $2::float8))
		ORDER BY p.jurisdiction, p.cadastre_id LIMIT $3`

// ParcelsAt reads the parcels whose bounding box holds the point; whether
// the parcel itself contains it is the caller's exact test.
func (l *Ledger) ParcelsAt(ctx context.Context, lon, lat float64) ([]Parcel, error) {
	rows, err := l.pool.Query(ctx, parcelsAtSQL, lon, lat, maxParcelsAt)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, scanParcel)
	return out, translate(err)
}

const parcelsOfAddressSQL = `SELECT ` + parcelColumns + parcelFrom + `WHERE p.address = $1 ORDER BY p.jurisdiction, p.cadastre_id`

// ParcelsOfAddress reads the parcels the gazetteer links to an address label.
func (l *Ledger) ParcelsOfAddress(ctx context.Context, label string) ([]Parcel, error) {
	rows, err := l.pool.Query(ctx, parcelsOfAddressSQL, label)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, scanParcel)
	return out, translate(err)
}

const gazetteerNearSQL = `SELECT
		EXISTS (SELECT 1 FROM parcels p WHERE box(point(p.min_lon, p.min_lat), point(p.max_lon, p.max_lat)) && box(point($1::float8 - $3::float8, $2::float8 - $3::float8), point($1::float8 + $3::float8, $2::float8 + $3::float8)))
		OR EXISTS (SELECT 1 FROM addresses a WHERE point(a.longitude, a.latitude) <@ box(point($1::float8 - $3::float8, $2::float8 - $3::float8), point($1::float8 + $3::float8, $2::float8 + $3::float8)))`

// GazetteerNear reports whether any parcel's bounding box or any address
// point lies within deg degrees (a square, in longitude and latitude) of
// the point: whether the point is inside the gazetteer's data.
func (l *Ledger) GazetteerNear(ctx context.Context, lon, lat, deg float64) (bool, error) {
	var near bool
	err := l.pool.QueryRow(ctx, gazetteerNearSQL,
		lon, lat, deg).Scan(&near)
	return near, translate(err)
}

const activeSiteWithFingerprintSQL = `SELECT site_id FROM sites WHERE account_id = $1 AND fingerprint = $2 AND archived_at IS NULL
		ORDER BY created_at, site_id LIMIT 1`

// ActiveSiteWithFingerprint returns the account's oldest active site with
// the fingerprint, or ErrNotFound.
func (l *Ledger) ActiveSiteWithFingerprint(ctx context.Context, account uuid.UUID, fingerprint string) (uuid.UUID, error) {
	var id uuid.UUID
	err := l.pool.QueryRow(ctx, activeSiteWithFingerprintSQL, account, fingerprint).Scan(&id)
	return id, translate(err)
}

const parcelsNearSQL = `SELECT ` + parcelColumns + parcelFrom + `
		WHERE box(point(p.min_lon, p.min_lat), point(p.max_lon, p.max_lat)) && box(point($1::float8, $2::float8), point($3::float8, $4::float8))
		ORDER BY point((p.min_lon + p.max_lon) / 2, (p.min_lat + p.max_lat) / 2) <-> point(($1::float8 + $3::float8) / 2, ($2::float8 + $4::float8) / 2),
			p.jurisdiction, p.cadastre_id
		LIMIT $5`

// ParcelsNear reads up to limit parcels whose bounding box meets the box
// b [min lon, min lat, max lon, max lat], nearest the box's centre first
// (by their boxes' centres), then by identifier: map context around a site.
func (l *Ledger) ParcelsNear(ctx context.Context, b [4]float64, limit int) ([]Parcel, error) {
	rows, err := l.pool.Query(ctx, parcelsNearSQL, b[0], b[1], b[2], b[3], limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, scanParcel)
	return out, translate(err)
}

package ledger

import "context"

// SectionLayers reads the layers of each of the sections keys (a key that
// is no section is absent), as Acquire reads them to decide which sections
// a restricted key may see: a replayed acquisition is checked against the
// caller's key the same way (the API's replay check).
func (l *Ledger) SectionLayers(ctx context.Context, keys []string) (map[string][]string, error) {
	rows, err := l.pool.Query(ctx, sectionLayersSQL, keys)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var (
			key, name string
			price     int64
			layers    []string
		)
		if err := rows.Scan(&key, &name, &price, &layers); err != nil {
			return nil, translate(err)
		}
		out[key] = layers
	}
	return out, translate(rows.Err())
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"

	"siteenv/geo"
	"siteenv/ingest/gazetteer"
	"siteenv/ingest/synth"
	"siteenv/ledger"
)

// gazetteerCmd loads address points and cadastral parcels, replacing the
// previous gazetteer atomically.
func gazetteerCmd(ctx context.Context, set settings, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ingest gazetteer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := dataDirFlag(fs, set)
	addrPath := fs.String("addresses", "", "addresses CSV: label,number,street,locality,state,postcode,longitude,latitude[,lga]")
	parcelPath := fs.String("parcels", "", "parcels: newline-delimited GeoJSON Features {jurisdiction, cadastre_id, address}")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *addrPath == "" || *parcelPath == "" || fs.NArg() > 0 {
		return usageError{"usage: siteenv ingest gazetteer --addresses FILE --parcels FILE"}
	}
	af, err := os.Open(*addrPath)
	if err != nil {
		return err
	}
	defer af.Close()
	pf, err := os.Open(*parcelPath)
	if err != nil {
		return err
	}
	defer pf.Close()
	e, err := openEnv(ctx, set, *dataDir, set.logger(stderr))
	if err != nil {
		return err
	}
	defer e.close()
	addrs := func(yield func(synth.Address) error) error {
		return gazetteer.ReadAddresses(af, func(_ int64, a synth.Address) error { return yield(a) })
	}
	parcels := func(yield func(synth.Parcel) error) error {
		return gazetteer.ReadParcels(pf, func(_ int64, p synth.Parcel) error { return yield(p) })
	}
	na, np, err := loadGazetteer(ctx, e.led, addrs, parcels)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]int64{"addresses": na, "parcels": np})
}

// loadGazetteer streams push-style readers into the ledger's pull-style loader.
func loadGazetteer(ctx context.Context, led *ledger.Ledger, addrs func(func(synth.Address) error) error, parcels func(func(synth.Parcel) error) error) (int64, int64, error) {
	nextA, stopA, errA := pull(addrs, func(a synth.Address) (ledger.AddressRow, error) {
		return ledger.AddressRow{Label: a.Label, Number: a.Number, Street: a.Street, Locality: a.Locality, State: a.State,
			Postcode: a.Postcode, Lon: a.Point[0], Lat: a.Point[1], LGA: a.LGA}, nil
	})
	defer stopA()
	nextP, stopP, errP := pull(parcels, func(p synth.Parcel) (ledger.ParcelRow, error) {
		g, err := geo.AppendGeoJSON(nil, p.Geometry)
		if err != nil {
			return ledger.ParcelRow{}, err
		}
		b := p.Geometry.Bound()
		row := ledger.ParcelRow{Jurisdiction: p.Jurisdiction, CadastreID: p.CadastreID, Geometry: g,
			MinLon: b.Min[0], MinLat: b.Min[1], MaxLon: b.Max[0], MaxLat: b.Max[1]}
		if p.AddressLabel != "" {
			row.Address = &p.AddressLabel
		}
		return row, nil
	})
	defer stopP()
	na, np, err := led.ReplaceGazetteer(ctx, nextA, nextP)
	// A reader's error explains the aborted load better than the database's.
	if rerr := errors.Join(*errA, *errP); rerr != nil {
		return 0, 0, fmt.Errorf("%w (nothing was loaded)", rerr)
	}
	return na, np, err
}

var errStopped = errors.New("stopped")

// pull turns a push iterator into the next() the ledger's COPY wants.
func pull[T, R any](push func(func(T) error) error, conv func(T) (R, error)) (next func() (R, bool, error), stop func(), errp *error) {
	var readErr error
	seq := iter.Seq[T](func(yield func(T) bool) {
		err := push(func(v T) error {
			if !yield(v) {
				return errStopped
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopped) {
			readErr = err
		}
	})
	n, s := iter.Pull(seq)
	next = func() (R, bool, error) {
		var zero R
		v, ok := n()
		if !ok {
			return zero, false, readErr
		}
		r, err := conv(v)
		return r, err == nil, err
	}
	return next, s, &readErr
}

// Package gazetteer holds the address points and cadastral parcels loaded by
// `siteenv ingest gazetteer --addresses FILE --parcels FILE`, and the two
// file formats they come in:
//
//   - addresses: CSV (RFC 4180, UTF-8) with the header
//     label,number,street,locality,state,postcode,longitude,latitude
//     optionally followed by lga (the locality's local government area,
//     e.g. "City of Parramatta", empty when unknown), and one address
//     point per row, coordinates in CRS84 degrees;
//   - parcels: newline-delimited GeoJSON, one Feature per line, geometry a
//     Polygon or MultiPolygon in CRS84, properties exactly
//     {"jurisdiction": "NSW", "cadastre_id": "12/DP34567",
//     "address": "12 Banksia Avenue, ERMINGTON NSW 2115" or null}.
//
// Readers are strict and streaming: every row is checked, the first bad row
// stops the read with a *LineError naming the line and the problem, and
// memory stays bounded by the longest line. Readers and writers are safe for
// concurrent use on different streams.
package gazetteer

import (
	"fmt"
	"slices"

	"github.com/paulmach/orb"
)

// States are the jurisdictions an address or a parcel may belong to.
var States = []string{"ACT", "NSW", "NT", "QLD", "SA", "TAS", "VIC", "WA"}

// ValidState reports whether s is one of States.
func ValidState(s string) bool { return slices.Contains(States, s) }

// Address is one address point.
type Address struct {
	// Label is the full address as displayed and searched, e.g.
	// "12 Banksia Avenue, ERMINGTON NSW 2115".
	Label string
	// Number is the house number, e.g. "12" or "12A".
	Number string
	// Street is the street name with its type, e.g. "Banksia Avenue".
	Street string
	// Locality is the suburb or town in capitals, e.g. "ERMINGTON".
	Locality string
	// State is one of States.
	State string
	// Postcode is four digits, e.g. "2115" or "0800".
	Postcode string
	// Point is the address point, [longitude, latitude] in CRS84.
	Point orb.Point
	// LGA is the local government area of the locality, e.g. "City of
	// Parramatta"; "" when unknown.
	LGA string
}

// Parcel is one cadastral parcel.
type Parcel struct {
	// Jurisdiction is the state or territory whose cadastre holds the
	// parcel, one of States.
	Jurisdiction string
	// CadastreID is the parcel's identifier in that cadastre's convention,
	// e.g. "12/DP34567" (NSW), "2RP1234" (QLD), `3\PS512345` (VIC).
	CadastreID string
	// Geometry is an orb.Polygon or orb.MultiPolygon in CRS84.
	Geometry orb.Geometry
	// AddressLabel is the Label of the address on the parcel, "" if none.
	AddressLabel string
}

// LineError is a bad row of an input file.
type LineError struct {
	File   string // "addresses" or "parcels"
	Line   int64  // 1-based line number in the file
	Reason string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s line %d: %s", e.File, e.Line, e.Reason)
}

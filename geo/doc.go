// Package geo holds the exact geodesy the service needs for Australian
// sites: the coordinate reference systems of the contract (OGC:CRS84,
// EPSG:4326, EPSG:7844 and the GDA2020 MGA zones EPSG:7847..7858),
// geodesic distance and area, a site-centred metric projection for the
// query engine, strict validation of site geometry and its canonical form
// and fingerprint.
//
// Geometry is carried as github.com/paulmach/orb values in longitude,
// latitude order (degrees), whatever the nominal axis order of the EPSG
// definition.
//
// Unless a doc comment says otherwise, every function in this package is
// safe for concurrent use: the package keeps no mutable global state but
// the lock-guarded cache of decoded coverage (DecodeCoverage), and the
// functions that take a geometry only read it (ReprojectToCRS84 is the
// exception: it rewrites its argument in place).
package geo

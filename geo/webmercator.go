package geo

import "math"

// Web Mercator (EPSG:3857, "Popular Visualisation Pseudo-Mercator"): the
// spherical Mercator formulas applied to WGS 84 longitude, latitude with the
// sphere's radius the WGS 84 semi-major axis.
const (
	webMercatorR      = 6378137.0
	webMercatorMaxX   = math.Pi * webMercatorR // 180 degrees of longitude
	webMercatorMaxLat = 85.06                  // the usual square extent (85.0511...) plus a margin
)

// WebMercatorForward projects longitude, latitude in degrees to EPSG:3857
// x, y in metres. No range checks. Safe for concurrent use.
func WebMercatorForward(lon, lat float64) (x, y float64) {
	return webMercatorR * lon * deg, webMercatorR * math.Atanh(math.Sin(lat*deg))
}

// WebMercatorInverse is the inverse of WebMercatorForward.
func WebMercatorInverse(x, y float64) (lon, lat float64) {
	return x / webMercatorR / deg, math.Atan(math.Sinh(y/webMercatorR)) / deg
}

// Package tiles holds the immutable side of siteenv's data: the object store
// that releases live in (file:// or s3://), the GeoParquet 1.1 tile codec and
// the release manifests that describe a published release.
//
// Layout in the store:
//
//	releases/<layer_id>/<release_id>/manifest.json
//	releases/<layer_id>/<release_id>/tiles/<tile>.parquet
//
// Objects are never overwritten: Store.Put fails with ErrExists when the key is
// taken. A release is published by writing its tiles first and its manifest
// last, so a release whose manifest can be read is complete.
//
// The functions of this package (WriteTile, ReadTile, ReadGeoParquet,
// ParseManifest, ...) keep no shared state and are safe to call from
// multiple goroutines; the stores and decoded Tiles document their own
// concurrency.
package tiles
